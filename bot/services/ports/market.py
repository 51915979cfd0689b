"""The capacity market as the services see it, and the cache its prices go through."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from bot.domain.market import HourlyPrice, MarketSnapshot
from bot.domain.request import CapacityRequest


class MarketData(Protocol):
    def snapshot(self, request: CapacityRequest, now: datetime) -> MarketSnapshot: ...


class PriceCache(Protocol):
    """A TTL cache for hourly prices (the store implements it)."""

    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None: ...

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None: ...
