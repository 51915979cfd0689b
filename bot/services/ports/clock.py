"""Time as a dependency, so the sandbox market, reminders and tests can move it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, UTC."""
        ...
