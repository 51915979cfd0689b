"""Usage samples in Redis: one capped list per request (`usage:<id>`), each entry
"<epoch seconds>:<running>", newest last. A round writes all of its samples in one
pipelined round trip; the list keeps the newest N and expires a while after the last one."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import cast

from bot.adapters.store.base import RedisBase
from bot.domain.sampling import Sample

SAMPLES_KEPT_FOR = 90 * 24 * 3600  # seconds after the last sample


class SamplesInRedis(RedisBase):
    def add_samples(self, samples: Mapping[str, Sample], keep: int) -> None:
        if not samples:
            return
        pipe = self.redis.pipeline(transaction=False)
        for request_id, sample in samples.items():
            key = self.key("usage", request_id)
            pipe.rpush(key, f"{int(sample.at.timestamp())}:{sample.running}")
            pipe.ltrim(key, -keep, -1)
            pipe.expire(key, SAMPLES_KEPT_FOR)
        pipe.execute()

    def samples(self, request_id: str) -> list[Sample]:
        raw = cast(list[str], self.redis.lrange(self.key("usage", request_id), 0, -1))
        out = []
        for entry in raw:
            at, _, running = entry.partition(":")
            out.append(Sample(datetime.fromtimestamp(int(at), UTC), int(running)))
        return out

    def samples_bytes(self, request_id: str) -> int:
        """What the request's samples take in Redis (MEMORY USAGE), for the benchmark."""
        return int(self.redis.memory_usage(self.key("usage", request_id)) or 0)
