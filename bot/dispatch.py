"""Running a request's work on a pool thread, waited for with a deadline: a request stuck on
a hung Redis keeps its pool thread, not the serving thread, past Slack's 3 seconds."""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


# Bolt runs on these threads, waited for with a deadline (see Call). A pool, not a thread
# per request: starting a thread costs more than the rest of a `/gpu help` ack. Sized so
# that requests stuck on a hung Redis (each holds a thread until its socket times out)
# leave room; past that, new ones wait in the queue and get the unavailable answer.
DISPATCH_THREADS = 64


class Pool:
    """Threads started as needed, up to `size`, taking calls from one queue. Lighter than
    a ThreadPoolExecutor, whose futures and waiters cost a `Condition` or two per call:
    handing every Slack request over took a fifth of the interpreter's time under load."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[Call] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting for a call that no submit has counted on yet

    def submit(self, call: Call) -> None:
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


_pool: Pool | None = None
_pool_lock = threading.Lock()


def dispatch_pool() -> Pool:
    """Made on first use, in the process that serves (after gunicorn's fork)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(DISPATCH_THREADS, "slack-dispatch")
        return _pool


class Call:
    """`fn` on a pool thread, waited for with a deadline: a request stuck on a hung
    Redis keeps its pool thread, not the caller, past Slack's 3 seconds."""

    __slots__ = ("_done", "_fn", "_lock", "_over", "_result", "_then")

    def __init__(self, fn: Callable[[], Any], pool: Pool | None = None) -> None:
        self._fn = fn
        self._result: Any = None
        self._over = False
        self._then: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._done = threading.Lock()  # held until the call is over
        self._done.acquire()
        (pool or dispatch_pool()).submit(self)

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
