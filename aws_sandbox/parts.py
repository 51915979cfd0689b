"""What every desk of the market shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from aws_sandbox.clock import Clock
from aws_sandbox.conditions import MarketConditions
from aws_sandbox.store import MarketStore
from aws_sandbox.world import World


@dataclass(frozen=True)
class MarketParts:
    clock: Clock
    world: World
    zones: Mapping[str, tuple[str, ...]]
    store: MarketStore
    conditions: MarketConditions
    payment_delay: timedelta
    account_id: str

    def zones_in(self, region: str) -> tuple[str, ...]:
        return tuple(self.zones.get(region, ()))

    def shown(self, record: dict[str, object], now: datetime) -> bool:
        """Whether AWS's describes show this purchase yet (see MarketConditions.lose_answers)."""
        since = record.get("shown_from")
        return not isinstance(since, str) or now >= datetime.fromisoformat(since)

    def stamp(self, record: dict[str, object], operation: str, now: datetime) -> None:
        """Mark a new purchase with when describes start to show it."""
        lag = self.conditions.take_lag(operation)
        if lag:
            record["shown_from"] = (now + lag).isoformat()

    def payment_outcome(self, now: datetime) -> tuple[datetime, bool]:
        """When a purchase made now clears payment, and whether it will fail then."""
        return now + self.payment_delay, self.conditions.payments_fail
