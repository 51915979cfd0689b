"""Slow work after the Slack ack: a bounded thread pool that logs failures and can be
waited on (tests and graceful shutdown use `wait_idle`).

Served over HTTP, work handed off while a request is handled is *held* until its response
has been written (`hold` / `release`, driven by the WSGI wrapper in bot/server.py): started
earlier, it would compete with that very response for the interpreter.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

log = logging.getLogger(__name__)

OnError = Callable[[Exception], object]
Task = tuple[Callable[..., Any], OnError | None, tuple[Any, ...], dict[str, Any]]
_held = threading.local()


class AfterAck:
    """Runs what a listener hands off once Slack has its ack (`run`)."""

    def __init__(
        self, max_workers: int = 8, on_depth: Callable[[int], object] | None = None
    ) -> None:
        """`on_depth` hears each change in the work queued or running (the metrics)."""
        self._on_depth = on_depth or (lambda _change: None)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="after-ack")
        self._pending: set[Future[Any]] = set()
        self._held_count = 0  # tasks waiting for their response to be sent
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def run(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_error: OnError | None = None,
        **kwargs: Any,
    ) -> None:
        """Run `fn(*args, **kwargs)` soon; `on_error` hears of a failure (to tell the
        user: after the ack, a failure would otherwise leave them waiting forever)."""
        # The request's log fields (bot.logs) go with the work to the pool's thread.
        ctx = contextvars.copy_context()
        task: Task = (partial(ctx.run, fn), on_error, args, kwargs)
        held: list[Task] | None = getattr(_held, "tasks", None)
        if held is not None:
            with self._lock:
                self._held_count += 1
            held.append(task)
            return
        self._start(task)

    def hold(self) -> list[Task]:
        """From now on, work submitted on this thread waits for `release`."""
        tasks: list[Task] = []
        _held.tasks = tasks
        return tasks

    @contextmanager
    def holding(self, tasks: list[Task]) -> Iterator[None]:
        """Work submitted on this thread inside goes into `tasks`, to wait for
        `release(tasks)`: for a request handled on one thread (a pool's) and answered on
        another."""
        _held.tasks = tasks
        try:
            yield
        finally:
            del _held.tasks

    def release(self, tasks: list[Task]) -> None:
        """Start the work held since `hold` (the response has been written)."""
        if getattr(_held, "tasks", None) is tasks:
            del _held.tasks
        for task in tasks:
            self._start(task)
            with self._lock:
                self._held_count -= 1
        tasks.clear()

    def _start(self, task: Task) -> None:
        fn, on_error, args, kwargs = task
        self._on_depth(1)
        future = self._pool.submit(self._run, fn, on_error, *args, **kwargs)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    @staticmethod
    def _run(
        fn: Callable[..., Any],
        on_error: OnError | None,
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
        self._on_depth(-1)
        with self._lock:
            self._pending.discard(future)
            if not self._pending and not self._held_count:
                self._idle.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no work is queued or running; False on timeout."""
        with self._lock:
            return self._idle.wait_for(
                lambda: not self._pending and not self._held_count, timeout=timeout
            )

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
