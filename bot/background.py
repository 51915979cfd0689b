"""Slow work after the Slack ack: a bounded thread pool that logs failures and can be
waited on (tests and graceful shutdown use `wait_idle`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)


class Background:
    def __init__(self, max_workers: int = 8) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="after-ack")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def submit(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_error: Callable[[Exception], object] | None = None,
        **kwargs: Any,
    ) -> Future[Any]:
        """Run `fn(*args, **kwargs)` soon; `on_error` hears of a failure (to tell the
        user: after the ack, a failure would otherwise leave them waiting forever)."""
        future = self._pool.submit(self._run, fn, on_error, *args, **kwargs)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    @staticmethod
    def _run(
        fn: Callable[..., Any],
        on_error: Callable[[Exception], object] | None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            log.exception("background work %s failed", getattr(fn, "__name__", fn))
            if on_error is not None:
                try:
                    on_error(exc)
                except Exception:
                    log.exception("could not report the failure to the user either")
            raise

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
            if not self._pending:
                self._idle.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no work is queued or running; False on timeout."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._pending, timeout=timeout)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
