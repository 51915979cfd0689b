"""The market's sense of time: anything with `now()`, so tests and the shell can move it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current moment, timezone-aware (UTC)."""
        ...
