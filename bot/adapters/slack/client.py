"""A Slack WebClient that retries rate limits (honouring Retry-After), 5xx and resets."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)


def make_web_client(token: str | None, base_url: str, timeout: int = 10) -> WebClient:
    client = WebClient(token=token, base_url=base_url, timeout=timeout)
    client.retry_handlers = [
        ConnectionErrorRetryHandler(max_retry_count=2),
        RateLimitErrorRetryHandler(max_retry_count=3),
        ServerErrorRetryHandler(max_retry_count=2),
    ]
    return client
