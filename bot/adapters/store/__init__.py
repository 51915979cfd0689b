"""The store: Redis (or its in-process twin for memory://)."""

from bot.adapters.store.connect import open_store
from bot.adapters.store.redis_store import RedisStore

__all__ = ["RedisStore", "open_store"]
