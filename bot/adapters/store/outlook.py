"""The capacity outlook's counters in Redis: one hash per shape and day
(`outlook:<kind>:<type>:<count>:<hours>:<YYYY-MM-DD>`), fields as bot/domain/outlook.py
names them. A quote's or a round's searches are written in one pipelined round trip
(HINCRBY per counter, EXPIREAT per hash), after the answer is shown; each hash expires
when it leaves the window, so the outlook holds at most `keep_days` days per shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import cast

from bot.adapters.store.base import RedisBase
from bot.domain.outlook import Search, Shape, day_of, increments


class OutlookInRedis(RedisBase):
    def _outlook_key(self, shape: Shape, day: date) -> str:
        return self.key("outlook", shape.key, day.isoformat())

    def record_searches(self, searches: Sequence[Search], keep_days: int) -> None:
        if not searches:
            return
        pipe = self.redis.pipeline(transaction=False)
        expiring: dict[str, date] = {}
        for search in searches:
            day = day_of(search.at)
            key = self._outlook_key(search.shape, day)
            for name, by in increments(search).items():
                pipe.hincrby(key, name, by)
            expiring[key] = day
        for key, day in expiring.items():
            gone = datetime.combine(day + timedelta(days=keep_days), time(), tzinfo=UTC)
            pipe.expireat(key, int(gone.timestamp()))
        pipe.execute()

    def outlook_days(
        self, shapes: Sequence[Shape], first: date, last: date
    ) -> dict[date, list[Mapping[str, str]]]:
        """Every shape's hash for each day from `first` to `last`, in one round trip."""
        days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        pipe = self.redis.pipeline(transaction=False)
        for day in days:
            for shape in shapes:
                pipe.hgetall(self._outlook_key(shape, day))
        replies = cast(list[dict[str, str]], pipe.execute())
        out: dict[date, list[Mapping[str, str]]] = {}
        for i, day in enumerate(days):
            hashes: list[Mapping[str, str]] = [
                h for h in replies[i * len(shapes) : (i + 1) * len(shapes)] if h
            ]
            if hashes:
                out[day] = hashes
        return out

    def outlook_bytes(self, shape: Shape, day: date) -> int:
        """What one shape-day takes in Redis (MEMORY USAGE), for the benchmark."""
        return int(self.redis.memory_usage(self._outlook_key(shape, day)) or 0)
