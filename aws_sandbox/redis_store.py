"""The sandbox market's purchases, counters and clock in the bot's Redis, so a purchase
made by one process is seen by another and survives a killed process.

Keys share the bot namespace's hash tag (`{namespace}:sandbox:...`), beside the bot's own.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import cast

import redis

from aws_sandbox.store import Record

# Insert-only add: the record and its place in the order are written together or not at all.
_ADD = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
"""


class RedisMarketStore:
    """`MarketStore` on Redis (or fakeredis for memory://). `scope` separates accounts."""

    def __init__(self, client: redis.Redis, namespace: str = "gpu", scope: str = "") -> None:
        self.redis = client
        self.prefix = "{" + namespace + "}:sandbox" + (f":{scope}" if scope else "")
        self._add = client.register_script(_ADD)

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def get(self, kind: str, key: str) -> Record | None:
        text = self.redis.hget(self._key("rec", kind), key)
        return None if text is None else _load(str(text))

    def add(self, kind: str, key: str, record: Record) -> bool:
        text = json.dumps(record, sort_keys=True)
        keys = [self._key("rec", kind), self._key("order", kind)]
        return bool(self._add(keys=keys, args=[key, text]))

    def records(self, kind: str) -> list[Record]:
        order = cast(list[str], self.redis.lrange(self._key("order", kind), 0, -1))
        if not order:
            return []
        texts = cast(list[str | None], self.redis.hmget(self._key("rec", kind), order))
        return [_load(t) for t in texts if t is not None]

    def bump(self, counter: str) -> int:
        return int(self.redis.incr(self._key("count", counter)))

    def count(self, counter: str) -> int:
        value = self.redis.get(self._key("count", counter))
        return int(str(value)) if value is not None else 0


class StoredClock:
    """The sandbox's time, kept in Redis: a moment set once, then moved only by `advance`,
    so every process on the same store (shell, workers, `gpu-bot requests`) agrees."""

    def __init__(self, client: redis.Redis, namespace: str = "gpu", start: datetime | None = None):
        self.redis = client
        self.key = "{" + namespace + "}:sandbox:clock"
        first = (start or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        self.redis.set(self.key, first.timestamp(), nx=True)

    def now(self) -> datetime:
        value = self.redis.get(self.key)
        return datetime.fromtimestamp(float(str(value)), UTC)

    def set(self, when: datetime) -> None:
        self.redis.set(self.key, when.astimezone(UTC).timestamp())

    def advance(self, delta: timedelta) -> datetime:
        return datetime.fromtimestamp(
            float(self.redis.incrbyfloat(self.key, delta.total_seconds())), UTC
        )


def _load(text: str) -> Record:
    record = json.loads(text)
    assert isinstance(record, dict)
    return record
