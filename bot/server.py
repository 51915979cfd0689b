"""Serving the Bolt app: HTTP under gunicorn (process management) with waitress in each
worker process, or Socket Mode; both answer GET /healthz for container health checks.

Why waitress inside gunicorn: gunicorn's gthread worker reads a request on one of its
threads, so a client that sends its body a byte at a time holds that thread; 20 of them
stopped a 16-thread worker. Waitress reads requests on one asynchronous I/O thread and
hands a thread only a complete request, refusing a body over `MAX_BODY_BYTES` from its
Content-Length before reading it. Gunicorn keeps what it does well: worker processes,
restarts, graceful shutdown.

In front of Bolt (`wsgi_app`): size, signature and shape are checked first (413, 401,
400: see `bot.adapters.slack.inbound`), a replayed signature is dropped, and a request
Bolt cannot answer within `ACK_DEADLINE` (a hung Redis) gets an answer saying so.
"""

from __future__ import annotations

import contextvars
import hmac
import io
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from bot.adapters.slack.inbound import (
    MAX_BODY_BYTES,
    REPLAY_WINDOW_SECONDS,
    Refusal,
    check_signature,
    read_payload,
)
from bot.after_ack import AfterAck, Task

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
# Slack waits 3 s for an ack; what is not answered by then is answered as unavailable.
ACK_DEADLINE = 2.5
HEALTH_DEADLINE = 1.0
UNAVAILABLE = (
    ":warning: gpu-bot could not reach its database in time to take this (Slack allows 3 "
    "seconds). It may not have been saved: look with `/gpu status` in a minute and try again."
)

HealthCheck = Callable[[], bool]
MetricsPage = Callable[[], tuple[bytes, str]]  # () -> (body, content type)
FirstSighting = Callable[[str, int], bool]  # (key, seconds to remember) -> first time?
# A slash command's fields -> is it answered wholly in its ack? (see wsgi_app)
AnsweredInAck = Callable[[Mapping[str, str]], bool]
WsgiResult = tuple[str, list[tuple[str, str]], bytes]
_JSON = [("Content-Type", "application/json")]
_BEARER = ("WWW-Authenticate", 'Bearer realm="metrics"')


def may_scrape(authorization: str | None, token: str | None) -> bool:
    """Without a token /metrics is open (keep it off the public ingress); with one, only
    `Authorization: Bearer <token>` reads it (Prometheus's `authorization` setting)."""
    if token is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def wsgi_app(
    app: App,
    healthy: HealthCheck,
    after_ack: AfterAck | None = None,
    signing_secret: str | None = None,
    first_sighting: FirstSighting | None = None,
    ack_deadline: float = ACK_DEADLINE,
    metrics: MetricsPage | None = None,
    metrics_token: str | None = None,
    answered_in_ack: AnsweredInAck | None = None,
) -> Callable[..., Iterable[bytes]]:
    """Slack requests on /slack/events, health on /healthz, 404 elsewhere. With
    `after_ack`, work a listener hands off starts once its response is written. With
    `signing_secret`, requests are checked here before Bolt (which then need not check
    again: build it with request verification off); with `first_sighting`, a signature
    seen before is dropped (Slack signatures carry no nonce: a captured request verifies
    for 5 minutes). With `metrics`, GET /metrics answers it (Prometheus text format), to
    a bearer of `metrics_token` when one is set.

    `answered_in_ack` says which signed slash commands are answered wholly in their ack
    (`/gpu help`, and a complete `/gpu reserve`): they read no store before answering and
    change nothing themselves (what a reserve starts is handed to the intake with the
    signature, and the intake drops a replay), so a replay gets the same answer and does
    nothing else. They skip the replay check here and run on the serving thread: with no
    store to hang on, they need no deadline.
    """
    slack = SlackRequestHandler(app, path=EVENTS_PATH)

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO")
        if path == HEALTH_PATH:
            ok = _within(HEALTH_DEADLINE, healthy) is True
            return _answer(start_response, 200 if ok else 503, {"ok": ok})
        if path == METRICS_PATH and metrics is not None:
            if not may_scrape(environ.get("HTTP_AUTHORIZATION"), metrics_token):
                start_response("401 Unauthorized", [*_JSON, _BEARER])
                return [b'{"error": "a bearer token is needed"}']
            page, content_type = metrics()
            start_response("200 OK", [("Content-Type", content_type)])
            return [page]
        if path != EVENTS_PATH:
            return _answer(start_response, 404, {"error": "not found"})
        if environ.get("REQUEST_METHOD") != "POST":
            return _answer(start_response, 405, {"error": "POST only"})
        body, refused = _read_body(environ)
        command = None
        if refused is None and signing_secret is not None:
            refused = check_signature(
                signing_secret,
                environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP"),
                environ.get("HTTP_X_SLACK_SIGNATURE"),
                body,
                time.time(),
            )
            if refused is None:
                refused, command = read_payload(str(environ.get("CONTENT_TYPE", "")), body)
        if refused is not None:
            log.warning("refused a request on %s: %s %s", path, refused.status, refused.reason)
            return _answer(start_response, refused.status, {"error": refused.reason})
        # Only a request verified here: without a signing secret, Bolt checks it.
        pure = command is not None and answered_in_ack is not None and answered_in_ack(command)
        signature = str(environ.get("HTTP_X_SLACK_SIGNATURE", ""))

        def bolt() -> WsgiResult:
            seen = None if pure else first_sighting
            if seen and signature and not seen(f"sig:{signature}", REPLAY_WINDOW_SECONDS):
                log.warning("dropped a replayed request (signature seen before)")
                return "200 OK", [("Content-Type", "text/plain")], b""
            inner = dict(environ)
            inner["wsgi.input"] = io.BytesIO(body)
            inner["CONTENT_LENGTH"] = str(len(body))
            return _collect(slack, inner)

        if pure:
            # In a context of its own: the log fields it binds stay off this thread.
            status, headers, payload = contextvars.Context().run(bolt)
            start_response(status, headers)
            return [payload]
        release = _nothing
        dispatch = bolt
        if after_ack is not None:
            # What the listener hands off (on the pool's thread) waits for the answer.
            held: list[Task] = []
            release = lambda: after_ack.release(held)  # noqa: E731

            def dispatch() -> WsgiResult:
                with after_ack.holding(held):
                    return bolt()

        call = _Call(dispatch)
        result = call.wait(ack_deadline)
        if result is None:
            # Too late for Slack: answer now, start the held work whenever Bolt is done.
            call.then(release)
            log.warning("no ack within %.1f s (is Redis answering?)", ack_deadline)
            status, headers, payload = _unavailable(str(environ.get("CONTENT_TYPE", "")), body)
            start_response(status, headers)
            return [payload]
        if isinstance(result, BaseException):
            release()
            raise result
        status, headers, payload = result
        start_response(status, headers)
        return _ThenRelease([payload], release)

    return application


def _nothing() -> None:
    return None


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


def _answer(start_response: StartResponse, status: int, data: dict[str, Any]) -> list[bytes]:
    reasons = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
    reasons |= {405: "Method Not Allowed", 413: "Payload Too Large", 503: "Service Unavailable"}
    start_response(f"{status} {reasons[status]}", [("Content-Type", "application/json")])
    return [json.dumps(data).encode()]


def _collect(wsgi: Callable[..., Iterable[bytes]], environ: dict[str, Any]) -> WsgiResult:
    """Run a WSGI app to completion, keeping its status, headers and body."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
        started[:] = [status, headers]
        return lambda _data: None

    chunks = wsgi(environ, start_response)
    try:
        payload = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    return started[0], started[1], payload


# Bolt runs on these threads, waited for with a deadline (see _Call). A pool, not a thread
# per request: starting a thread costs more than the rest of a `/gpu help` ack. Sized so
# that requests stuck on a hung Redis (each holds a thread until its socket times out)
# leave room; past that, new ones wait in the queue and get the unavailable answer.
DISPATCH_THREADS = 64


class _Pool:
    """Threads started as needed, up to `size`, taking calls from one queue. Lighter than
    a ThreadPoolExecutor, whose futures and waiters cost a `Condition` or two per call:
    handing every Slack request over took a fifth of the interpreter's time under load."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting for a call that no submit has counted on yet

    def submit(self, call: _Call) -> None:
        with self._lock:
            start = not self._idle and self._threads < self._size
            if start:
                self._threads += 1
            elif self._idle:
                self._idle -= 1
        self._queue.put(call)
        if start:
            name = f"{self._name}-{self._threads}"
            threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._queue.get().run()
            with self._lock:
                self._idle += 1


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _dispatch_pool() -> _Pool:
    """Made on first use, in the process that serves (after gunicorn's fork)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(DISPATCH_THREADS, "slack-dispatch")
        return _pool


class _Call:
    """`fn` on a pool thread, waited for with a deadline: a request stuck on a hung
    Redis keeps its pool thread, not the caller, past Slack's 3 seconds."""

    __slots__ = ("_done", "_fn", "_lock", "_over", "_result", "_then")

    def __init__(self, fn: Callable[[], Any], pool: _Pool | None = None) -> None:
        self._fn = fn
        self._result: Any = None
        self._over = False
        self._then: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._done = threading.Lock()  # held until the call is over
        self._done.acquire()
        (pool or _dispatch_pool()).submit(self)

    def run(self) -> None:
        """On the pool's thread."""
        try:
            # A fresh context: nothing bound by the request this thread served before
            # (the log fields) shows on the lines of this one before Bolt binds its own.
            self._result = contextvars.Context().run(self._fn)
        except BaseException as exc:  # handed to the waiter, which raises it
            self._result = exc
        with self._lock:
            self._over = True
            then = self._then
        self._done.release()
        if then is not None:
            try:
                then()
            except Exception:
                log.exception("starting the work held for a late request failed")

    def then(self, fn: Callable[[], None]) -> None:
        """Run `fn` once the call is over (now, if it is)."""
        with self._lock:
            if not self._over:
                self._then = fn
                return
        fn()

    def wait(self, seconds: float) -> Any:
        """The result, the exception raised, or None when not done within `seconds`
        (to be called once)."""
        if not self._done.acquire(timeout=seconds):
            return None
        return self._result


def _within(seconds: float, check: HealthCheck) -> bool | None:
    """The check's answer, False when it fails, None when it takes longer than `seconds`."""

    def safe() -> bool:
        return _safe(check)

    result = _Call(safe).wait(seconds)
    return result if isinstance(result, bool) else None


def _unavailable(content_type: str, body: bytes) -> WsgiResult:
    """An ack that says the request could not be taken: as the reply to a command, as an
    error on a form (which stays open, as typed), or to a click's response_url."""
    plain = [("Content-Type", "application/json")]
    if content_type.startswith("application/json"):
        return "200 OK", plain, b""
    fields = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
    if "command" in fields:
        reply = {"response_type": "ephemeral", "text": UNAVAILABLE}
        return "200 OK", plain, json.dumps(reply).encode()
    payload = json.loads(fields.get("payload") or "{}")
    if payload.get("type") == "view_submission":
        blocks = list(payload.get("view", {}).get("state", {}).get("values", {}))
        if blocks:
            errors = {"response_action": "errors", "errors": {blocks[0]: UNAVAILABLE[:150]}}
            return "200 OK", plain, json.dumps(errors).encode()
    url = payload.get("response_url")
    if isinstance(url, str) and url:
        threading.Thread(target=_tell, args=(url,), name="tell-unavailable", daemon=True).start()
    return "200 OK", plain, b""


def _tell(response_url: str) -> None:
    from slack_sdk.webhook import WebhookClient

    try:
        WebhookClient(response_url, timeout=5).send(
            text=UNAVAILABLE, response_type="ephemeral", replace_original=False
        )
    except Exception as exc:  # it is only a courtesy; the log says why it failed
        log.warning("could not say the store is unavailable: %s", exc)


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


def _safe(check: HealthCheck) -> bool:
    try:
        return check()
    except Exception as exc:
        log.warning("health check failed: %s", exc)
        return False


# Waitress, per worker process. Slow or idle connections cost a socket, not a thread;
# this many may be open at once, and bot.http_guard's reserve past it (the container's
# open-file limit must allow both).
CONNECTION_LIMIT = 1000
# A connection that sends nothing for this long is closed.
CHANNEL_TIMEOUT = 30


def serve_http(
    make_application: Callable[[], Callable[..., Iterable[bytes]]],
    port: int,
    host: str = "0.0.0.0",  # noqa: S104 - a container listens on all interfaces
    threads: int = 16,
    workers: int = 1,
    on_worker_exit: Callable[[], None] | None = None,
    on_child_exit: Callable[[int], None] | None = None,
) -> None:
    """Run the WSGI app: gunicorn with `workers` processes, each serving with waitress
    on `threads` threads (see the module doc for why).

    `make_application` runs inside each worker process, after gunicorn forks, so the
    store, thread pools and the job worker live where the requests are served (a
    `memory://` store built before the fork would split in two). `on_worker_exit` runs
    in a worker process as it exits (after its last request), to stop its job worker;
    `on_child_exit` in the master, with the exited worker's pid (its live metrics go).
    """
    from gunicorn.app.base import BaseApplication

    from bot.waitress_worker import WaitressWorker

    class _Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            settings = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "worker_class": WaitressWorker,
                "threads": threads,
                "timeout": 30,
                "graceful_timeout": 20,
                "keepalive": 5,
                "accesslog": None,
                "loglevel": "warning",
                "logger_class": _gunicorn_logger(),
            }
            if on_worker_exit is not None:
                settings["worker_exit"] = lambda _server, _worker: on_worker_exit()
            if on_child_exit is not None:
                settings["child_exit"] = lambda _server, worker: on_child_exit(worker.pid)
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return make_application()

    _Gunicorn().run()


def _gunicorn_logger() -> type:
    """Gunicorn's own lines (a worker killed, a timeout) through the bot's log handler,
    so they are JSON too when GPU_BOT_LOG_FORMAT=json, and redacted."""
    from gunicorn.glogging import Logger

    class ThroughRoot(Logger):  # type: ignore[misc]
        def setup(self, cfg: Any) -> None:
            super().setup(cfg)
            for log in (self.error_log, self.access_log):
                for handler in list(log.handlers):
                    log.removeHandler(handler)
                log.propagate = True

    return ThroughRoot


class _HealthHandler(BaseHTTPRequestHandler):
    healthy: HealthCheck = staticmethod(lambda: True)
    metrics: MetricsPage | None = None
    metrics_token: str | None = None

    def do_GET(self) -> None:
        page = type(self).metrics
        if self.path == METRICS_PATH and page is not None:
            if not may_scrape(self.headers.get("Authorization"), type(self).metrics_token):
                self.send_response(401)
                self.send_header(*_BEARER)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body, content_type = page()
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        ok = self.path == HEALTH_PATH and _safe(type(self).healthy)
        self.send_response(200 if ok else 503 if self.path == HEALTH_PATH else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"ok": ok}).encode())

    def log_message(self, format: str, *args: Any) -> None:
        return


def start_health_server(
    port: int,
    healthy: HealthCheck,
    host: str = "0.0.0.0",  # noqa: S104 - a container listens on all interfaces
    metrics: MetricsPage | None = None,
    metrics_token: str | None = None,
) -> ThreadingHTTPServer:
    """/healthz (and /metrics, to a bearer of `metrics_token` when set) for Socket Mode
    and the worker, which have no HTTP server otherwise."""
    attrs = {
        "healthy": staticmethod(healthy),
        "metrics": staticmethod(metrics) if metrics else None,
        "metrics_token": metrics_token,
    }
    handler = type("Health", (_HealthHandler,), attrs)
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, name="healthz", daemon=True).start()
    return server


def serve_socket_mode(
    app: App, app_token: str, stop: threading.Event | None = None, ping_interval: float = 10
) -> None:
    """Connect to Slack over Socket Mode and serve until `stop` is set (for ever
    without one). When Slack drops the connection the client opens a new one at its
    next check, every `ping_interval` seconds (Bolt's default, 10)."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(app, app_token, ping_interval=ping_interval)
    handler.connect()  # type: ignore[no-untyped-call]
    try:
        (stop or threading.Event()).wait()
    finally:
        handler.close()  # type: ignore[no-untyped-call]
