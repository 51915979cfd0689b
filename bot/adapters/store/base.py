"""What every part of the Redis store shares: the client, the namespace's keys and the
Lua scripts (loaded once per store, run by hash)."""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from typing import Any

import redis
from redis.commands.core import Script


def epoch(when: datetime) -> float:
    return when.timestamp()


class RedisBase:
    def __init__(self, client: redis.Redis, namespace: str = "gpu") -> None:
        self.redis = client
        # Every key of a namespace shares one hash tag, so the scripts run on Redis Cluster.
        self.prefix = "{" + namespace + "}"
        self._scripts: dict[str, Script] = {}

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def ping(self) -> bool:
        return bool(self.redis.ping())

    def _lua(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run lua/`name` (registered on first use)."""
        script = self._scripts.get(name)
        if script is None:
            source = resources.files("bot.adapters.store").joinpath("lua", name).read_text("utf-8")
            script = self._scripts[name] = self.redis.register_script(source)
        return script(keys=keys, args=args)
