"""Short-lived values in Redis: prices, lookups and seen request signatures, each with
its own expiry."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from bot.adapters.store.base import RedisBase
from bot.domain.market import HourlyPrice


class CachesInRedis(RedisBase):
    def first_sighting(self, key: str, seconds: int) -> bool:
        """True the first time `key` is seen in `seconds` (a replayed request: False)."""
        return bool(self.redis.set(self.key("seen", key), "1", nx=True, ex=seconds))

    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None:
        raw = self.redis.get(self.key("price", key))
        if not raw:
            return None
        data = json.loads(raw)
        return HourlyPrice.model_validate(data["price"]), datetime.fromisoformat(data["at"])

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None:
        data = {"price": price.model_dump(mode="json"), "at": price.source.as_of.isoformat()}
        self.redis.set(self.key("price", key), json.dumps(data), px=int(ttl.total_seconds() * 1000))

    def cache_get(self, key: str) -> str | None:
        value = self.redis.get(self.key("cache", key))
        return str(value) if value is not None else None

    def cache_put(self, key: str, value: str, ttl: timedelta) -> None:
        self.redis.set(self.key("cache", key), value, px=int(ttl.total_seconds() * 1000))
