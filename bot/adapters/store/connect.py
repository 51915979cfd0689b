"""Open the store named by REDIS_URL."""

from __future__ import annotations

import redis

from bot.adapters.store.redis_store import RedisStore


def open_redis(url: str) -> redis.Redis:
    """A client for `redis://`, `rediss://`, `unix://`, or an in-process server for
    `memory://` (fakeredis with Lua, so the same scripts run)."""
    if url.startswith("memory://"):
        import fakeredis

        client: redis.Redis = fakeredis.FakeRedis(
            server=fakeredis.FakeServer(), decode_responses=True, lua_modules=set()
        )
        return client
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=5,
        socket_connect_timeout=5,
        health_check_interval=30,
        retry_on_timeout=True,
    )


def unreachable(exc: BaseException) -> bool:
    """The store could not be reached (Redis down, restarting or not answering in time),
    as opposed to a bug: what is answered "try again in a minute"."""
    return isinstance(exc, (redis.ConnectionError, redis.TimeoutError))


def open_store(url: str, namespace: str = "gpu") -> RedisStore:
    return RedisStore(open_redis(url), namespace=namespace)
