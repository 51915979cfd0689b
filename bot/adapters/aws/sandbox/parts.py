"""What every desk of the market shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.adapters.aws.sandbox.conditions import MarketConditions
from bot.adapters.aws.sandbox.store import MarketStore
from bot.domain.catalog import Catalog
from bot.services.ports import Clock


@dataclass(frozen=True)
class MarketParts:
    clock: Clock
    catalog: Catalog
    zones: Mapping[str, tuple[str, ...]]
    store: MarketStore
    conditions: MarketConditions
    payment_delay: timedelta
    account_id: str

    def zones_in(self, region: str) -> tuple[str, ...]:
        return tuple(self.zones.get(region, ()))

    def payment_outcome(self, now: datetime) -> tuple[datetime, bool]:
        """When a purchase made now clears payment, and whether it will fail then."""
        return now + self.payment_delay, self.conditions.payments_fail
