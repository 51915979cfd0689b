"""The capacity outlook's counters in Redis: one hash per shape and day
(`outlook:<kind>:<type>:<count>:<hours>:<YYYY-MM-DD>`), fields as bot/domain/outlook.py
names them. A quote's or a round's searches are written in one pipelined round trip, one
script call per search (lua/outlook_add.lua: its counters added, the earliest lead kept
low, the hash's expiry set), after the answer is shown; each hash expires when it leaves
the window, so the outlook holds at most `keep_days` days per shape. A shape-day stays
under Redis's listpack limit (128 fields), about 0.5 to 1 KB (benchmarks/outlook.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from importlib import resources
from typing import cast

from redis.exceptions import NoScriptError

from bot.adapters.store.base import RedisBase
from bot.domain.outlook import Search, Shape, day_of, increments


class OutlookInRedis(RedisBase):
    _outlook_sha: str | None = None

    def _outlook_key(self, shape: Shape, day: date) -> str:
        return self.key("outlook", shape.key, day.isoformat())

    def record_searches(self, searches: Sequence[Search], keep_days: int) -> None:
        if not searches:
            return
        calls = []
        for search in searches:
            day = day_of(search.at)
            gone = datetime.combine(day + timedelta(days=keep_days), time(), tzinfo=UTC)
            counts = increments(search)
            args: list[str | int] = [int(gone.timestamp()), len(counts.adds)]
            for pairs in (counts.adds, counts.lows):
                for name, value in pairs.items():
                    args += [name, value]
            calls.append((self._outlook_key(search.shape, day), args))
        try:
            self._add_counts(calls)
        except NoScriptError:  # Redis restarted (or flushed its scripts) since loading it
            self._outlook_sha = None
            self._add_counts(calls)

    def _add_counts(self, calls: list[tuple[str, list[str | int]]]) -> None:
        """EVALSHA by hand: a pipeline running a registered Script first asks SCRIPT
        EXISTS, a second round trip on every write."""
        sha = self._outlook_sha
        if sha is None:
            source = resources.files("bot.adapters.store").joinpath("lua", "outlook_add.lua")
            sha = self._outlook_sha = str(self.redis.script_load(source.read_text("utf-8")))
        pipe = self.redis.pipeline(transaction=False)
        for key, args in calls:
            pipe.evalsha(sha, 1, key, *args)
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
