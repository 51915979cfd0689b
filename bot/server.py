"""Serving the Bolt app: HTTP on a production WSGI server (gunicorn, gthread), or Socket
Mode; both answer GET /healthz for container health checks.

Bolt's own `app.start()` serves one request at a time, which on a busy or slow machine
pushes acks towards Slack's 3-second limit; gunicorn's threaded worker does not.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from bot.after_ack import AfterAck

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"

HealthCheck = Callable[[], bool]


def wsgi_app(
    app: App, healthy: HealthCheck, after_ack: AfterAck | None = None
) -> Callable[..., Iterable[bytes]]:
    """Slack requests on /slack/events, health on /healthz, 404 elsewhere. With
    `after_ack`, work a listener hands off starts once its response is written."""
    slack = SlackRequestHandler(app, path=EVENTS_PATH)

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == HEALTH_PATH:
            ok = _safe(healthy)
            body = json.dumps({"ok": ok}).encode()
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "application/json")])
            return [body]
        if after_ack is None:
            return slack(environ, start_response)
        held = after_ack.hold()
        try:
            response = slack(environ, start_response)
        except BaseException:
            after_ack.release(held)
            raise
        return _ThenRelease(response, lambda: after_ack.release(held))

    return application


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
    except Exception:
        log.exception("health check failed")
        return False


def serve_http(
    make_application: Callable[[], Callable[..., Iterable[bytes]]],
    port: int,
    host: str = "0.0.0.0",  # noqa: S104 - a container listens on all interfaces
    threads: int = 16,
    workers: int = 1,
    on_worker_exit: Callable[[], None] | None = None,
) -> None:
    """Run the WSGI app under gunicorn: `workers` gthread processes of `threads` each.

    `make_application` runs inside each worker process, after gunicorn forks, so the
    store, thread pools and the job worker live where the requests are served (a
    `memory://` store built before the fork would split in two). `on_worker_exit` runs
    in a worker process as it exits (after its last request), to stop its job worker.
    """
    from gunicorn.app.base import BaseApplication

    class _Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            settings = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "worker_class": "gthread",
                "threads": threads,
                "timeout": 30,
                "graceful_timeout": 20,
                "keepalive": 5,
                "accesslog": None,
                "loglevel": "warning",
            }
            if on_worker_exit is not None:
                settings["worker_exit"] = lambda _server, _worker: on_worker_exit()
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return make_application()

    _Gunicorn().run()


class _HealthHandler(BaseHTTPRequestHandler):
    healthy: HealthCheck = staticmethod(lambda: True)

    def do_GET(self) -> None:
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
) -> ThreadingHTTPServer:
    """/healthz for Socket Mode, where there is no HTTP server otherwise."""
    handler = type("Health", (_HealthHandler,), {"healthy": staticmethod(healthy)})
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, name="healthz", daemon=True).start()
    return server


def serve_socket_mode(app: App, app_token: str) -> None:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    SocketModeHandler(app, app_token).start()  # type: ignore[no-untyped-call]
