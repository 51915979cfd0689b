"""Slack clients that retry short rate limits (honouring Retry-After), 5xx and connection
resets."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web import SlackResponse
from slack_sdk.webhook import WebhookClient, WebhookResponse

from bot.adapters.calls import observe_call


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


# The longest Retry-After waited out inside a call. A longer one is raised instead: a job
# then goes back to the queue rather than sleeping while it holds its lease (and every
# other job waits behind it), and a listener's work gives up rather than block a thread.
MAX_RETRY_AFTER_S = 2.0


class BriefRateLimitRetryHandler(RateLimitErrorRetryHandler):
    """slack_sdk's 429 handler sleeps for any Retry-After; this one only for short ones."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        raw = {k.lower(): v for k, v in response.headers.items()}.get("retry-after") or "1"
        try:
            wait = float(raw[0] if isinstance(raw, list) else raw)
        except ValueError:
            return False
        return wait <= MAX_RETRY_AFTER_S


def retry_handlers() -> list[RetryHandler]:
    return [
        ConnectionErrorRetryHandler(max_retry_count=2),
        BriefRateLimitRetryHandler(max_retry_count=3),
        AnyServerErrorRetryHandler(max_retry_count=2),
    ]


class CountedWebClient(WebClient):
    """A WebClient that reports each call's time and error (bot.adapters.calls)."""

    def api_call(self, api_method: str, **kwargs: Any) -> SlackResponse:
        started = time.monotonic()
        error = ""
        try:
            return super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or f"http_{exc.response.status_code}")
            raise
        except Exception as exc:
            error = type(exc).__name__
            raise
        finally:
            observe_call("slack", api_method, time.monotonic() - started, error)


class CountedWebhookClient(WebhookClient):
    """response_url posts, reported like Web API calls (as operation `response_url`)."""

    def send_dict(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        started = time.monotonic()
        error = ""
        try:
            response: WebhookResponse = super().send_dict(body, headers)
            if response.status_code != 200:
                error = f"http_{response.status_code}"
            return response
        except Exception as exc:
            error = type(exc).__name__
            raise
        finally:
            observe_call("slack", "response_url", time.monotonic() - started, error)


def counted(client: WebClient) -> WebClient:
    """The same client, counted: Bolt makes a plain WebClient for each request."""
    if isinstance(client, CountedWebClient):
        return client
    if type(client) is WebClient:
        # Bolt's client is made for this one request: counting it in place costs nothing,
        # where a copy costs a second client per request (CountedWebClient adds no state).
        client.__class__ = CountedWebClient
        return client
    copy = CountedWebClient(
        token=client.token,
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        headers=client.headers,
        logger=client.logger,
        retry_handlers=client.retry_handlers,
    )
    copy.default_params = dict(client.default_params)  # the team id, among others
    return copy


def make_web_client(token: str | None, base_url: str, timeout: int = 10) -> WebClient:
    client = CountedWebClient(token=token, base_url=base_url, timeout=timeout)
    client.retry_handlers = retry_handlers()
    return client


def may_post_to(response_url: str, api_url: str) -> bool:
    """Whether a response_url in a (signed) payload is one to post to: Slack's are https
    (https://api.slack.com/interactivity/handling#message_responses); the local API's
    (the shell's, the tests') are on the origin of the Web API the bot is set up with.
    Anything else (ftp://, a bare word) is forged or broken, and posting to it would
    fail in the client with a traceback."""
    try:
        url, api = urlsplit(response_url), urlsplit(api_url)
    except ValueError:  # an unclosed IPv6 bracket, say
        return False
    if not url.hostname:
        return False
    return url.scheme == "https" or (url.scheme, url.netloc) == (api.scheme, api.netloc)


def make_webhook_client(url: str, timeout: int = 10) -> WebhookClient:
    """For response_url posts, with the same retries as the Web API."""
    return CountedWebhookClient(url, timeout=timeout, retry_handlers=retry_handlers())


def token_refusal(token: str, base_url: str) -> str | None:
    """Why Slack will not take `token` (one line), or None when auth.test accepts it.
    Checked once before serving, so a wrong token is one message, not a traceback from
    each process."""
    try:
        WebClient(token=token, base_url=base_url, timeout=10).auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error") or exc.response.status_code
        return (
            f"Slack refused SLACK_BOT_TOKEN ({error}): use the app's Bot User OAuth Token "
            "(xoxb-…, under OAuth & Permissions) and check the app is installed"
        )
    except OSError as exc:
        return f"could not reach Slack at {base_url} to check SLACK_BOT_TOKEN: {exc}"
    return None
