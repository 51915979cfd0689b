"""Serving the Bolt app: HTTP under gunicorn (process management) with waitress in each
worker process, or Socket Mode; both answer GET /healthz for container health checks.

Why waitress inside gunicorn: gunicorn's gthread worker reads a request on one of its
threads, so a client that sends its body a byte at a time holds that thread; 20 of them
stopped a 16-thread worker. Waitress reads requests on one asynchronous I/O thread and
hands a thread only a complete request, refusing a body over `MAX_BODY_BYTES` from its
Content-Length before reading it (bot/waitress_worker.py, bot/http_guard.py). Gunicorn
keeps what it does well: worker processes, restarts, graceful shutdown.

What runs in front of Bolt is bot/front.py, layer by layer; `wsgi_app` puts it together.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from bot.after_ack import AfterAck
from bot.dispatch import Call
from bot.front import (
    _BEARER,
    ACK_DEADLINE,
    EVENTS_PATH,
    HEALTH_PATH,
    METRICS_PATH,
    AnsweredInAck,
    Bolt,
    DropReplays,
    FirstSighting,
    Handler,
    Health,
    HealthCheck,
    Metrics,
    MetricsPage,
    Routes,
    SlackRequests,
    WithinDeadline,
    may_scrape,
    safe,
    unavailable_reply,
)

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication

log = logging.getLogger(__name__)


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
    """Slack requests on /slack/events, health on /healthz, GET /metrics (to a bearer of
    `metrics_token` when one is set), 404 elsewhere: the layers of bot/front.py.

    With `signing_secret`, requests are checked before Bolt; with `first_sighting`, a
    signature seen before is dropped; with `after_ack`, work a listener hands off starts
    once its response is written; `answered_in_ack` picks the commands that skip the
    replay check and the deadline (see SlackRequests)."""
    bolt = Bolt(SlackRequestHandler(app, path=EVENTS_PATH))
    checked: Handler = DropReplays(bolt, first_sighting) if first_sighting else bolt
    events = SlackRequests(
        others=WithinDeadline(checked, after_ack, ack_deadline),
        in_ack=bolt,
        signing_secret=signing_secret,
        answered_in_ack=answered_in_ack,
    )
    routes: dict[str, WSGIApplication] = {HEALTH_PATH: Health(healthy), EVENTS_PATH: events}
    if metrics is not None:
        routes[METRICS_PATH] = Metrics(metrics, metrics_token)
    return Routes(routes)


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
        ok = self.path == HEALTH_PATH and safe(type(self).healthy)
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
    app: App,
    app_token: str,
    stop: threading.Event | None = None,
    ping_interval: float = 10,
    ack_deadline: float = ACK_DEADLINE,
) -> None:
    """Connect to Slack over Socket Mode and serve until `stop` is set (for ever
    without one). When Slack drops the connection the client opens a new one at its
    next check, every `ping_interval` seconds (Bolt's default, 10). Each envelope is
    acked within `ack_deadline`, as in HTTP mode (see `_socket_mode_handler`)."""
    handler = _socket_mode_handler(app, app_token, ping_interval, ack_deadline)
    handler.connect()
    try:
        (stop or threading.Event()).wait()
    finally:
        handler.close()


def _socket_mode_handler(
    app: App, app_token: str, ping_interval: float, ack_deadline: float
) -> Any:
    """Bolt's Socket Mode handler with the HTTP front's ack budget: Bolt runs on a pool
    thread, and an envelope it has not answered within `ack_deadline` (a hung Redis) is
    acked with the same "could not reach its database" answer (bot/front.py
    `unavailable_reply`) instead of leaving the user to Slack's 3 s timeout. Bolt's late
    answer, when it comes, is dropped. A listener that finds the store down at once gets
    the same answer from Bolt's error handler (`answer_store_down`)."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler
    from slack_bolt.adapter.socket_mode.internals import run_bolt_app, send_response
    from slack_sdk.socket_mode.response import SocketModeResponse

    class WithinDeadline(SocketModeHandler):
        def handle(self, client: Any, req: Any) -> None:
            started = time.time()
            result = Call(lambda: run_bolt_app(self.app, req)).wait(ack_deadline)
            if isinstance(result, BaseException):
                raise result
            if result is not None:
                send_response(client, req, result, started)
                return
            log.warning("no ack within %.1f s (is Redis answering?)", ack_deadline)
            payload = req.payload if req.type in ("slash_commands", "interactive") else {}
            reply = unavailable_reply(payload or {})
            client.send_socket_mode_response(
                SocketModeResponse(envelope_id=req.envelope_id, payload=reply)
            )

    return WithinDeadline(app, app_token, ping_interval=ping_interval)
