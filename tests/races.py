"""Make a race certain instead of likely: every compare-and-set of one request waits until
that request has been read `readers` times, so at least that many racers decide on the
same version. A store whose version check is broken then lets several writers win every
time, not only when the machine's timing happens to interleave them. Keep `readers` at or
below the number of clicks that can run at once (the after-ack pool), or the first
writer waits out the timeout."""

from __future__ import annotations

import threading
from typing import Any

from bot.adapters.store import RedisStore


class ReadsBeforeWrites:
    def __init__(self, request_id: str, readers: int, timeout: float = 10.0) -> None:
        self.request_id = request_id
        self.readers = readers
        self.timeout = timeout
        self.reads = 0
        self.held_writes = 0
        self._lock = threading.Lock()
        self._all_read = threading.Event()

    def install(self, store: RedisStore) -> None:
        """Hold this store's writes of the request until `readers` reads of it were made
        through any store this gate is installed on (two replicas share one gate)."""
        real_get, real_save = store.get, store.save

        def get(request_id: str) -> Any:
            record = real_get(request_id)
            if request_id == self.request_id:
                with self._lock:
                    self.reads += 1
                    if self.reads >= self.readers:
                        self._all_read.set()
            return record

        def save(old: Any, new: Any, *args: Any, **kwargs: Any) -> Any:
            if old.id == self.request_id and not self._all_read.is_set():
                with self._lock:
                    self.held_writes += 1
                self._all_read.wait(self.timeout)
            return real_save(old, new, *args, **kwargs)

        store.get = get  # type: ignore[method-assign]
        store.save = save  # type: ignore[method-assign]


class TotalsReadBeforeWrites:
    """Hold every write that carries a budget guard (a decisive approval judged within the
    team's budget) until the team's totals were read `readers` times: that many approvals
    then decide on the same totals, and a store whose guard is broken lets them all pass
    every time."""

    def __init__(self, readers: int, timeout: float = 10.0) -> None:
        self.readers = readers
        self.timeout = timeout
        self.reads = 0
        self.held_writes = 0
        self._lock = threading.Lock()
        self._all_read = threading.Event()

    def install(self, store: RedisStore) -> None:
        real_read, real_save = store.team_month, store.save

        def team_month(team: str, month: str) -> Any:
            totals = real_read(team, month)
            with self._lock:
                self.reads += 1
                if self.reads >= self.readers:
                    self._all_read.set()
            return totals

        def save(old: Any, new: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("budget_guard") is not None and not self._all_read.is_set():
                with self._lock:
                    self.held_writes += 1
                self._all_read.wait(self.timeout)
            return real_save(old, new, *args, **kwargs)

        store.team_month = team_month  # type: ignore[method-assign]
        store.save = save  # type: ignore[method-assign]
