"""Clocks implementing the `Clock` port: the system's, and one that only moves when told."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that stands still until it is set or advanced. Thread-safe."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when.astimezone(UTC)

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now
