"""Slow work after the Slack ack: a bounded thread pool that logs failures and can be
waited on (tests and graceful shutdown use `wait_idle`), and lanes for work that is
cheaper done for many items at once (`lane`).

Served over HTTP, work handed off while a request is handled is *held* until its response
has been written (`hold` / `release`, driven by the WSGI wrapper in bot/server.py): started
earlier, it would compete with that very response for the interpreter.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

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
        self._lanes: list[Lane[Any]] = []

    def lane(self, flush: Callable[[list[T]], object], name: str, linger: float = 0.0) -> Lane[T]:
        """A lane whose items `flush` takes in batches, on a thread of its own: what was
        put while it was busy, or within `linger` seconds of the first item, goes in the
        next call (a group commit). `wait_idle` and `shutdown` cover it."""
        lane: Lane[T] = Lane(flush, name, self, linger)
        self._lanes.append(lane)
        return lane

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
                # The task may have finished already, and its `_done` found it still held.
                if not self._pending and not self._held_count:
                    self._idle.notify_all()
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
        """Block until no work is queued or running, in the pool or a lane (whose
        failures hand work to the pool); False on timeout."""
        deadline = time.monotonic() + timeout
        for _ in range(3):  # a lane's failure may queue work for the pool, and so on
            if not all(lane.wait_idle(deadline - time.monotonic()) for lane in self._lanes):
                return False
            with self._lock:
                if not self._idle.wait_for(
                    lambda: not self._pending and not self._held_count,
                    timeout=max(0.0, deadline - time.monotonic()),
                ):
                    return False
            if all(lane.idle() for lane in self._lanes):
                return True
        return False

    def shutdown(self, wait: bool = True) -> None:
        for lane in self._lanes:
            lane.close(wait)
        self._pool.shutdown(wait=wait, cancel_futures=not wait)


class Lane(Generic[T]):
    """Items flushed in batches on one thread: `put` is cheap (no I/O), and under load
    each call of `flush` takes everything put since the last one, so one round trip
    serves many requests. A failed flush is logged and each item's `on_error` hears of
    it (on the pool)."""

    def __init__(
        self, flush: Callable[[list[T]], object], name: str, pool: AfterAck, linger: float
    ) -> None:
        self._flush = flush
        self._linger = linger
        self._pool = pool
        self._items: list[tuple[T, OnError | None]] = []
        self._busy = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def put(self, item: T, on_error: OnError | None = None) -> None:
        with self._changed:
            if self._closed:
                raise RuntimeError("the lane is closed (the process is stopping)")
            self._items.append((item, on_error))
            if not self._busy:
                self._changed.notify_all()

    def idle(self) -> bool:
        with self._changed:
            return not self._items and not self._busy

    def wait_idle(self, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._items and not self._busy, timeout=max(0.0, timeout)
            )

    def close(self, wait: bool = True) -> None:
        """Flush what is queued (with `wait`), then stop the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if wait:
            self._thread.join(timeout=30)

    def _serve(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._items or self._closed)
                if not self._items:
                    return
                self._busy = True  # from here `put` does not wake this thread
                if self._linger and not self._closed:
                    # Let the answer that handed the first item in go out, and more
                    # items arrive, before taking the interpreter for the write.
                    self._changed.wait(self._linger)
                batch, self._items = self._items, []
            try:
                self._flush([item for item, _ in batch])
            except Exception as exc:
                log.exception("%s: could not handle %d item(s)", self._thread.name, len(batch))
                for _, on_error in batch:
                    if on_error is not None:
                        self._pool.run(on_error, exc)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
