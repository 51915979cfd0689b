"""Slack clients that retry rate limits (honouring Retry-After), 5xx and connection resets."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.webhook import WebhookClient


class AnyServerErrorRetryHandler(ServerErrorRetryHandler):
    """slack_sdk's handler retries only 500 and 503; a 502 or 504 from a proxy is as
    transient."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and 500 <= response.status_code < 600


def retry_handlers() -> list[RetryHandler]:
    return [
        ConnectionErrorRetryHandler(max_retry_count=2),
        RateLimitErrorRetryHandler(max_retry_count=3),
        AnyServerErrorRetryHandler(max_retry_count=2),
    ]


def make_web_client(token: str | None, base_url: str, timeout: int = 10) -> WebClient:
    client = WebClient(token=token, base_url=base_url, timeout=timeout)
    client.retry_handlers = retry_handlers()
    return client


def make_webhook_client(url: str, timeout: int = 10) -> WebhookClient:
    """For response_url posts, with the same retries as the Web API."""
    return WebhookClient(url, timeout=timeout, retry_handlers=retry_handlers())
