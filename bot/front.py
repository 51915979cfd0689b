"""The HTTP front, as WSGI middleware read one layer at a time, outside in:

    Routes            /healthz, /metrics, /slack/events; 404 elsewhere
    SlackRequests     POST only; the body's size (413), signature (401) and shape (400)
                      checked before Bolt; Slack's unsigned ssl_check and its signed
                      app_rate_limited notice answered 200 here; commands answered
                      wholly in their ack go straight to Bolt, everything else through
                      the next layers
    WithinDeadline    Bolt on a pool thread, answered as unavailable after ACK_DEADLINE
                      (a hung Redis) or when Redis could not be reached (down); the
                      work a listener hands off starts once the answer is written
    DropReplays       a signature seen before is dropped (Slack's carry no nonce)
    Bolt              the Bolt app's own WSGI adapter, run to completion

The inner layers (DropReplays, Bolt) take the environ and return the whole answer
(status, headers, body): the deadline needs it in one piece.
"""

from __future__ import annotations

import contextvars
import hmac
import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from slack_bolt import BoltRequest, BoltResponse
from slack_bolt.adapter.wsgi import SlackRequestHandler

from bot.adapters.slack.inbound import (
    MAX_BODY_BYTES,
    REPLAY_WINDOW_SECONDS,
    Refusal,
    check_signature,
    is_rate_limited_notice,
    is_ssl_check,
    read_payload,
)
from bot.adapters.store.connect import unreachable
from bot.after_ack import AfterAck, Task
from bot.dispatch import Call

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
# Slack waits 3 s for an ack; what is not answered by then is answered as unavailable,
# as is what finds the database down.
ACK_DEADLINE = 2.5
HEALTH_DEADLINE = 1.0
UNAVAILABLE = (
    ":warning: gpu-bot could not reach its database to take this, so it may not have been "
    "saved: look with `/gpu status` in a minute and try again."
)
# What SlackRequests leaves in the environ for the layers inside it.
BODY = "gpu_bot.body"
COMMAND = "gpu_bot.command"

HealthCheck = Callable[[], bool]
MetricsPage = Callable[[], tuple[bytes, str]]  # () -> (body, content type)
FirstSighting = Callable[[str, int], bool]  # (key, seconds to remember) -> first time?
# A slash command's fields -> is it answered wholly in its ack? (see SlackRequests)
AnsweredInAck = Callable[[Mapping[str, str]], bool]
WsgiResult = tuple[str, list[tuple[str, str]], bytes]
Handler = Callable[["WSGIEnvironment"], WsgiResult]  # an inner layer: the whole answer
_JSON_TYPE = ("Content-Type", "application/json")
_BEARER = ("WWW-Authenticate", 'Bearer realm="metrics"')
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
_REASONS |= {405: "Method Not Allowed", 413: "Payload Too Large", 503: "Service Unavailable"}


def _json() -> list[tuple[str, str]]:
    """Headers for a JSON answer, a new list each time: a WSGI server may add to the list
    it is given (wsgiref adds Content-Length), and a shared one would carry that length
    into the next answer."""
    return [_JSON_TYPE]


def answer(start_response: StartResponse, status: int, data: dict[str, Any]) -> list[bytes]:
    start_response(f"{status} {_REASONS[status]}", _json())
    return [json.dumps(data).encode()]


def may_scrape(authorization: str | None, token: str | None) -> bool:
    """Without a token /metrics is open (keep it off the public ingress); with one, only
    `Authorization: Bearer <token>` reads it (Prometheus's `authorization` setting)."""
    if token is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def safe(check: HealthCheck) -> bool:
    try:
        return check()
    except Exception as exc:
        log.warning("health check failed: %s", exc)
        return False


# --- the routes ----------------------------------------------------------------------------


class Routes:
    def __init__(self, routes: Mapping[str, WSGIApplication]) -> None:
        self._routes = dict(routes)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        route = self._routes.get(str(environ.get("PATH_INFO")))
        if route is None:
            return answer(start_response, 404, {"error": "not found"})
        return route(environ, start_response)


class Health:
    """200 when the store answers within a second, 503 otherwise."""

    def __init__(self, healthy: HealthCheck) -> None:
        self._healthy = healthy

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        result = Call(lambda: safe(self._healthy)).wait(HEALTH_DEADLINE)
        ok = result is True
        return answer(start_response, 200 if ok else 503, {"ok": ok})


class Metrics:
    def __init__(self, page: MetricsPage, token: str | None) -> None:
        self._page = page
        self._token = token

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not may_scrape(environ.get("HTTP_AUTHORIZATION"), self._token):
            start_response("401 Unauthorized", [_JSON_TYPE, _BEARER])
            return [b'{"error": "a bearer token is needed"}']
        page, content_type = self._page()
        start_response("200 OK", [("Content-Type", content_type)])
        return [page]


# --- Slack's requests --------------------------------------------------------------------


class SlackRequests:
    """Checks a Slack request before Bolt sees it; passes the body and, for a slash
    command, its fields inward (BODY, COMMAND).

    Without a signing secret nothing is verified here and Bolt checks the signature
    itself. With one, Bolt need not check again (build it with request verification off).

    `answered_in_ack` says which signed slash commands are answered wholly in their ack
    (`/gpu help`, a complete `/gpu reserve`): they read no store before answering and
    change nothing themselves (what a reserve starts is handed to the intake with the
    signature, and the intake drops a replay), so a replay gets the same answer and does
    nothing else. They go to `in_ack` (no replay check, no deadline: with no store to
    hang on they need none), on this thread; the rest to `others`.
    """

    def __init__(
        self,
        others: WSGIApplication,
        in_ack: Handler,
        signing_secret: str | None = None,
        answered_in_ack: AnsweredInAck | None = None,
    ) -> None:
        self._others = others
        self._in_ack = in_ack
        self._secret = signing_secret
        self._answered_in_ack = answered_in_ack

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return answer(start_response, 405, {"error": "POST only"})
        body, refused = _read_body(environ)
        content_type = str(environ.get("CONTENT_TYPE", ""))
        if refused is None and is_ssl_check(content_type, body):
            # Unsigned by Slack, and nothing to act on: answered here, before the signature.
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b""]
        command = None
        if refused is None and self._secret is not None:
            refused = check_signature(
                self._secret,
                environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP"),
                environ.get("HTTP_X_SLACK_SIGNATURE"),
                body,
                time.time(),
            )
            if refused is None and is_rate_limited_notice(content_type, body):
                log.warning("Slack is dropping events: the app is over the Events API rate limit")
                return answer(start_response, 200, {"ok": True})
            if refused is None:
                refused, command = read_payload(content_type, body)
        if refused is not None:
            path = environ.get("PATH_INFO")
            log.warning("refused a request on %s: %s %s", path, refused.status, refused.reason)
            return answer(start_response, refused.status, {"error": refused.reason})
        environ[BODY], environ[COMMAND] = body, command
        # Only a request verified here: without a signing secret, Bolt checks it.
        if command is not None and self._answered_in_ack and self._answered_in_ack(command):
            # In a context of its own: the log fields it binds stay off this thread.
            status, headers, payload = contextvars.Context().run(self._in_ack, environ)
            start_response(status, headers)
            return [payload]
        return self._others(environ, start_response)


def _read_body(environ: WSGIEnvironment) -> tuple[bytes, Refusal | None]:
    """The body, read only when its declared length is one Slack could send."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return b"", Refusal(400, "Content-Length is not a number")
    if length > MAX_BODY_BYTES:
        return b"", Refusal(413, f"body over {MAX_BODY_BYTES} bytes")
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    if len(body) < length:
        return b"", Refusal(400, "body shorter than its Content-Length")
    return body, None


class WithinDeadline:
    """The inner handler on a pool thread, waited for `deadline` seconds: what is not
    answered by then, or fails because the store could not be reached (the replay check
    reads Redis before Bolt), gets a 200 saying the bot could not reach its store. With
    `after_ack`, the work a listener hands off (on the pool's thread) waits until the
    answer is written, then starts."""

    def __init__(
        self, inner: Handler, after_ack: AfterAck | None = None, deadline: float = ACK_DEADLINE
    ) -> None:
        self._inner = inner
        self._after_ack = after_ack
        self._deadline = deadline

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        release: Callable[[], None] = _nothing
        dispatch: Callable[[], WsgiResult] = lambda: self._inner(environ)  # noqa: E731
        after_ack = self._after_ack
        if after_ack is not None:
            held: list[Task] = []
            release = lambda: after_ack.release(held)  # noqa: E731

            def dispatch() -> WsgiResult:
                with after_ack.holding(held):
                    return self._inner(environ)

        call = Call(dispatch)
        result = call.wait(self._deadline)
        if result is None:
            # Too late for Slack: answer now, start the held work whenever Bolt is done.
            call.then(release)
            log.warning("no ack within %.1f s (is Redis answering?)", self._deadline)
            body: bytes = environ[BODY]
            status, headers, payload = unavailable(str(environ.get("CONTENT_TYPE", "")), body)
            start_response(status, headers)
            return [payload]
        if isinstance(result, BaseException):
            release()
            if not unreachable(result):
                raise result
            log.warning("answered as unavailable: the store could not be reached: %s", result)
            status, headers, payload = unavailable(
                str(environ.get("CONTENT_TYPE", "")), environ[BODY]
            )
            start_response(status, headers)
            return [payload]
        status, headers, payload = result
        start_response(status, headers)
        return _ThenRelease([payload], release)


def _nothing() -> None:
    return None


class _ThenRelease:
    """A WSGI body whose close() - called by the server after the last byte is sent -
    starts the work held for this request."""

    def __init__(self, body: Iterable[bytes], then: Callable[[], None]) -> None:
        self._body = body
        self._then = then

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._then()


def unavailable(content_type: str, body: bytes) -> WsgiResult:
    """An ack that says the request could not be taken: as the reply to a command, as an
    error on a form (which stays open, as typed), or to a click's response_url."""
    if content_type.startswith("application/json"):
        return "200 OK", _json(), b""
    fields = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
    payload: dict[str, Any] = (
        fields if "command" in fields else json.loads(fields.get("payload") or "{}")
    )
    reply = unavailable_reply(payload)
    return "200 OK", _json(), json.dumps(reply).encode() if reply else b""


def unavailable_reply(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ack's payload saying the request could not be taken, for a slash command's
    fields or an interaction's payload (HTTP and Socket Mode alike); None for an empty
    ack (a click is told on its response_url, on a thread of its own)."""
    if "command" in payload:
        return {"response_type": "ephemeral", "text": UNAVAILABLE}
    if payload.get("type") == "view_submission":
        blocks = list(payload.get("view", {}).get("state", {}).get("values", {}))
        if blocks:
            return {"response_action": "errors", "errors": {blocks[0]: UNAVAILABLE[:150]}}
    url = payload.get("response_url")
    if isinstance(url, str) and url:
        threading.Thread(target=_tell, args=(url,), name="tell-unavailable", daemon=True).start()
    return None


def answer_store_down(error: Exception, request: BoltRequest, logger: logging.Logger) -> Any:
    """Bolt's error handler (`app.error`), for a listener or middleware that raised. When
    the store could not be reached (Redis down), Slack hears 200 with `unavailable_reply`,
    over HTTP and Socket Mode alike, instead of a 500 it would show as its own failure.
    Anything else is logged with its traceback and left to Bolt's 500, as without it."""
    if not unreachable(error):
        logger.exception(f"Failed to run listener function (error: {error})")
        return None
    log.warning("answered as unavailable: the store could not be reached: %s", error)
    reply = unavailable_reply(request.body)
    return BoltResponse(status=200, body=reply or "")


def _tell(response_url: str) -> None:
    from slack_sdk.webhook import WebhookClient

    try:
        WebhookClient(response_url, timeout=5).send(
            text=UNAVAILABLE, response_type="ephemeral", replace_original=False
        )
    except Exception as exc:  # it is only a courtesy; the log says why it failed
        log.warning("could not say the store is unavailable: %s", exc)


class DropReplays:
    """A signature seen in the last REPLAY_WINDOW_SECONDS is answered 200, empty, and
    goes no further: Slack's signatures have no nonce, so a captured request verifies
    again for 5 minutes."""

    def __init__(self, inner: Handler, first_sighting: FirstSighting) -> None:
        self._inner = inner
        self._first_sighting = first_sighting

    def __call__(self, environ: WSGIEnvironment) -> WsgiResult:
        signature = str(environ.get("HTTP_X_SLACK_SIGNATURE", ""))
        if signature and not self._first_sighting(f"sig:{signature}", REPLAY_WINDOW_SECONDS):
            log.warning("dropped a replayed request (signature seen before)")
            return "200 OK", [("Content-Type", "text/plain")], b""
        return self._inner(environ)


class Bolt:
    """The Bolt app's WSGI adapter, given the body already read, run to completion."""

    def __init__(self, slack: SlackRequestHandler) -> None:
        self._slack = slack

    def __call__(self, environ: WSGIEnvironment) -> WsgiResult:
        body: bytes = environ[BODY]
        inner = dict(environ)
        inner["wsgi.input"] = io.BytesIO(body)
        inner["CONTENT_LENGTH"] = str(len(body))
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
            started[:] = [status, headers]
            return lambda _data: None

        chunks = self._slack(inner, start_response)
        try:
            payload = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        return started[0], started[1], payload
