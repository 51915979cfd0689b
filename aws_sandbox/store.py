"""Where the market keeps what was bought, behind a small interface.

Records are JSON-serialisable dicts, so a Redis-backed store can hold them unchanged.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

Record = dict[str, Any]


class MarketStore(Protocol):
    def get(self, kind: str, key: str) -> Record | None:
        """The record stored under `key`, or None."""
        ...

    def add(self, kind: str, key: str, record: Record) -> bool:
        """Store `record` unless `key` is taken (atomically); whether it was stored.

        Insert-only: purchases never change once made (states follow from the clock), and
        a taken key is how a duplicate training plan name is refused.
        """
        ...

    def records(self, kind: str) -> list[Record]:
        """Every record of this kind, in the order they were added."""
        ...

    def bump(self, counter: str) -> int:
        """Add one to a counter (how many purchase calls were made, ...); the new value."""
        ...

    def count(self, counter: str) -> int: ...


class InMemoryMarketStore:
    """In-process, thread-safe. Keeps JSON text so records cannot alias or drift."""

    def __init__(self) -> None:
        self._kinds: dict[str, dict[str, str]] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, kind: str, key: str) -> Record | None:
        with self._lock:
            text = self._kinds.get(kind, {}).get(key)
        return None if text is None else _load(text)

    def add(self, kind: str, key: str, record: Record) -> bool:
        text = json.dumps(record, sort_keys=True)
        with self._lock:
            entries = self._kinds.setdefault(kind, {})
            if key in entries:
                return False
            entries[key] = text
            return True

    def records(self, kind: str) -> list[Record]:
        with self._lock:
            texts = list(self._kinds.get(kind, {}).values())
        return [_load(text) for text in texts]

    def bump(self, counter: str) -> int:
        with self._lock:
            self._counts[counter] = self._counts.get(counter, 0) + 1
            return self._counts[counter]

    def count(self, counter: str) -> int:
        with self._lock:
            return self._counts.get(counter, 0)


def _load(text: str) -> Record:
    record = json.loads(text)
    assert isinstance(record, dict)
    return record
