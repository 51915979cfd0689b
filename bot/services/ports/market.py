"""The capacity market as the services see it, and the cache its prices go through."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from bot.domain.market import HourlyPrice, MarketSnapshot
from bot.domain.request import CapacityRequest


class MarketData(Protocol):
    def snapshot(self, request: CapacityRequest, now: datetime) -> MarketSnapshot: ...

    def snapshots(self, requests: Sequence[CapacityRequest], now: datetime) -> list[MarketSnapshot]:
        """One snapshot per request, fetched at the same time (one request per region)."""
        ...

    def regions(self) -> tuple[str, ...]:
        """The AWS regions of the partition the bot runs in."""
        ...

    def offered_in(self, instance_type: str, region: str) -> bool | None:
        """Whether the region sells the type; None when that could not be told."""
        ...


class PriceCache(Protocol):
    """A TTL cache for hourly prices (the store implements it)."""

    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None: ...

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None: ...
