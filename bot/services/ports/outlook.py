"""Where the capacity outlook's counters are kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Protocol

from bot.domain.outlook import Search, Shape


class OutlookLog(Protocol):
    def record_searches(self, searches: Sequence[Search], keep_days: int) -> None:
        """Add each search to its shape's counters for its day (one round trip)."""

    def outlook_days(
        self, shapes: Sequence[Shape], first: date, last: date
    ) -> dict[date, list[Mapping[str, str]]]:
        """Each day's hashes of the shapes, from `first` to `last` (days with none left out)."""
        ...
