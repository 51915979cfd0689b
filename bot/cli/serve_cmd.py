"""`gpu-bot serve` and `gpu-bot worker`."""

from __future__ import annotations

import argparse
import atexit
import gc
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from bot.cli.output import fail, settings_or_exit
from bot.config import Settings
from bot.logs import configure, secrets_of

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.app import Wiring


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the Slack bot (Socket Mode with SLACK_APP_TOKEN, else HTTP on /slack/events)",
    )
    p.add_argument("--port", type=int, default=3000, help="HTTP port, also /healthz (3000)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="HTTP processes (default: the CPU count; 1 with REDIS_URL=memory://)",
    )
    p.add_argument("--threads", type=int, default=16, help="HTTP threads per process (16)")
    p.add_argument(
        "--no-worker", action="store_true", help="do not run the job worker in this process"
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="jobs run at once by the job worker in each process (4)",
    )
    p.set_defaults(run=run_serve)
    w = sub.add_parser("worker", help="run only the job worker (quotes, notifications, timeouts)")
    w.add_argument(
        "--concurrency", type=int, default=8, help="jobs run at once in this process (8)"
    )
    w.add_argument("--interval", type=float, default=1.0, help="seconds between polls (1)")
    w.add_argument("--port", type=int, default=None, help="serve /healthz on this port")
    w.set_defaults(run=run_worker)


def default_workers(settings: Settings) -> int:
    """One HTTP process per CPU; one only with memory://, which one process holds."""
    if settings.redis_url.startswith("memory://"):
        return 1
    return max(1, os.cpu_count() or 1)


def serve_problems(
    settings: Settings, separate_worker: bool = False, workers: int = 1
) -> list[str]:
    """What `serve` needs beyond a valid configuration."""
    problems = []
    if workers < 1:
        problems.append("--workers must be at least 1")
    if workers > 1 and settings.redis_url.startswith("memory://"):
        problems.append(
            "REDIS_URL=memory:// is private to one process: --workers above 1 would give "
            "each process its own requests (use redis://)"
        )
    if separate_worker and settings.redis_url.startswith("memory://"):
        problems.append(
            "REDIS_URL=memory:// is private to one process: with --no-worker no worker "
            "could see the jobs (use redis://)"
        )
    if settings.slack_bot_token is None:
        problems.append("SLACK_BOT_TOKEN is needed to talk to Slack")
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        problems.append("SLACK_SIGNING_SECRET is needed in HTTP mode (or set SLACK_APP_TOKEN)")
    if not settings.approvers and not settings.approver_group:
        problems.append("GPU_BOT_APPROVERS or GPU_BOT_APPROVER_GROUP: nobody could approve")
    if settings.approval_channel is None:
        problems.append("GPU_BOT_APPROVAL_CHANNEL is needed: where requests are posted")
    return problems


def _settings() -> Settings:
    settings = settings_or_exit()
    secrets = secrets_of(
        settings.slack_bot_token,
        settings.slack_signing_secret,
        settings.slack_app_token,
        settings.metrics_token,
    )
    configure(settings.log_level, settings.log_format, secrets)
    return settings


def run_serve(args: argparse.Namespace) -> int:
    settings = _settings()
    workers = args.workers if args.workers is not None else default_workers(settings)
    refused = _cannot_serve(settings, args.no_worker, workers)
    if refused:
        return fail(refused, code=1)
    http = settings.slack_app_token is None
    if http:
        # Before prometheus_client is imported (it reads the variable then).
        metrics_dir = _metrics_dir()
        atexit.register(_remove_in_this_process_only, metrics_dir, os.getpid())
    from bot import server

    process = _ServingProcess(settings, args)
    if settings.slack_app_token is not None:
        return process.serve_socket_mode(settings.slack_app_token)
    from bot.adapters.metrics.files import process_exited

    server.serve_http(
        process.make_application,
        args.port,
        threads=args.threads,
        workers=workers,
        on_worker_exit=process.stop_jobs,
        on_child_exit=process_exited,
    )
    return 0


def _cannot_serve(settings: Settings, separate_worker: bool, workers: int) -> str | None:
    """Why the bot cannot serve with these settings (the token included), or None."""
    problems = serve_problems(settings, separate_worker=separate_worker, workers=workers)
    if problems:
        return "cannot serve:\n  " + "\n  ".join(problems)
    from bot.adapters.slack.client import token_refusal

    token = settings.slack_bot_token  # never None here: serve_problems says so otherwise
    refused = token_refusal(token.get_secret_value(), settings.slack_api_url) if token else None
    return f"cannot serve: {refused}" if refused else None


class _ServingProcess:
    """What one serving process runs: the services and the Bolt app, built after gunicorn
    forks, and the process's own job worker unless --no-worker, stopped on the way out."""

    def __init__(self, settings: Settings, args: argparse.Namespace) -> None:
        self.settings = settings
        self.args = args
        self.stops: list[Callable[[], None]] = []  # stop this process's job worker, then wait

    def start(self, request_verification: bool = True) -> tuple[Wiring, App]:
        # Imported here, in each worker process after gunicorn forks: the master only
        # supervises, and stays small.
        from bot.app import build_app, build_services
        from bot.worker import Worker

        services = build_services(self.settings)
        app = build_app(services, request_verification=request_verification)
        # What start-up built lives as long as the process: out of the collector's sight,
        # a full collection takes microseconds instead of pausing every request ~70 ms.
        gc.collect()
        gc.freeze()
        if not self.args.no_worker:
            stop = threading.Event()
            worker = Worker(services, concurrency=self.args.concurrency, grace=JOB_GRACE_SECONDS)
            thread = worker.start_thread(stop)
            self.stops.append(lambda: _stop_and_wait(stop, thread))
            _on_sigterm(stop.set)  # start stopping while the last requests are answered
        return services, app

    def stop_jobs(self) -> None:
        for stop_and_wait in self.stops:
            stop_and_wait()

    def serve_socket_mode(self, app_token: SecretStr) -> int:
        from bot import server
        from bot.app import metrics_page

        services, app = self.start()
        server.start_health_server(
            self.args.port,
            services.store.ping,
            metrics=metrics_page(services),
            metrics_token=_revealed(self.settings.metrics_token),
        )

        def exit_cleanly(*_: object) -> None:
            self.stop_jobs()
            raise SystemExit(0)

        previous = signal.signal(signal.SIGTERM, exit_cleanly)
        try:
            server.serve_socket_mode(app, app_token.get_secret_value())
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.stop_jobs()
        return 0

    def make_application(self) -> Any:
        from bot import server
        from bot.app import metrics_page
        from handlers.commands import answered_in_ack

        secret = self.settings.slack_signing_secret
        # The front (server.wsgi_app) verifies each signature: Bolt need not do it again.
        services, app = self.start(request_verification=secret is None)
        return server.wsgi_app(
            app,
            services.store.ping,
            services.after_ack,
            signing_secret=secret.get_secret_value() if secret else None,
            first_sighting=services.store.first_sighting,
            metrics=metrics_page(services),
            metrics_token=_revealed(self.settings.metrics_token),
            answered_in_ack=answered_in_ack(services),
        )


def _revealed(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret else None


def _remove_in_this_process_only(path: str, owner: int) -> None:
    """The metrics directory goes when the process that made it (gunicorn's master) exits.
    Its workers are forks that inherit the exit handler: one leaving (a restart, the
    shutdown) must not take the files the master and the other workers still write."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def _metrics_dir() -> str:
    """A fresh directory for this run's per-process metrics files, inside
    PROMETHEUS_MULTIPROC_DIR when the operator set one (prometheus_client wants it empty
    at start: files left by an earlier run would be added in)."""
    parent = os.environ.get(METRICS_DIR_ENV) or None
    path = tempfile.mkdtemp(prefix="gpu-bot-metrics-", dir=parent)
    os.environ[METRICS_DIR_ENV] = path
    return path


METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Under gunicorn's graceful timeout (20 s), after which it kills a worker process.
JOB_GRACE_SECONDS = 15.0


def _stop_and_wait(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(JOB_GRACE_SECONDS + 3)


def _on_sigterm(then: Callable[[], None]) -> None:
    """Call `then` on SIGTERM, before whatever handled SIGTERM already (gunicorn's)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handle(signum: int, frame: FrameType | None) -> None:
        then()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, handle)


def worker_problems(settings: Settings) -> list[str]:
    """What a separate `worker` needs: the jobs it runs post to Slack from the bot's Redis."""
    problems = []
    if settings.redis_url.startswith("memory://"):
        problems.append(
            "REDIS_URL=memory:// is private to one process: a separate worker needs the "
            "bot's Redis (use redis://)"
        )
    if settings.slack_bot_token is None:
        problems.append("SLACK_BOT_TOKEN is needed: the jobs post to Slack")
    if settings.approval_channel is None:
        problems.append("GPU_BOT_APPROVAL_CHANNEL is needed: where request cards are posted")
    return problems


def run_worker(args: argparse.Namespace) -> int:
    # First of all: a SIGTERM while the imports and the store's set-up are still under
    # way (slow on a busy node) stops the worker cleanly instead of killing it.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    settings = _settings()
    from bot.app import build_services
    from bot.worker import Worker

    problems = worker_problems(settings)
    if problems:
        return fail("cannot run the worker:\n  " + "\n  ".join(problems), code=1)
    services = build_services(settings)
    if args.port is not None:
        from bot.app import metrics_page
        from bot.server import start_health_server

        start_health_server(
            args.port,
            services.store.ping,
            metrics=metrics_page(services),
            metrics_token=_revealed(settings.metrics_token),
        )
    logging.getLogger(__name__).info("worker started")
    Worker(services, concurrency=args.concurrency).run_forever(stop, interval=args.interval)
    return 0
