"""The store: Redis (or its in-process twin for memory://)."""

from bot.adapters.store.connect import open_store
from bot.adapters.store.redis_store import (
    ClaimedJob,
    Job,
    RedisStore,
    VersionConflict,
)
from bot.domain.audit import AuditEntry

__all__ = ["AuditEntry", "ClaimedJob", "Job", "RedisStore", "VersionConflict", "open_store"]
