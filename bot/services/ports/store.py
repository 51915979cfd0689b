"""The store as the services see it (RedisStore implements it, for redis:// and memory://)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.ports.delivery import DeliveryLog
from bot.services.ports.jobs import Job, JobQueue


class VersionConflict(Exception):
    """Someone else changed the request first; re-read and decide again."""

    def __init__(self, request_id: str, version: int, state: str) -> None:
        self.request_id = request_id
        self.version = version
        self.state = state
        super().__init__(f"{request_id} is at version {version} ({state})")


class Requests(Protocol):
    """Requests and their audit trail.

    `create` and `save` are compare-and-sets that write the audit entry and the jobs in
    the same step, and wake a waiting worker when they schedule any (no `wake` call
    needed after them); `save` raises VersionConflict when `old` is not the stored
    version.
    """

    def id_for(self, key: str) -> str:
        """A new request id for `key` the first time; the same id for the same key after
        (a job that creates a request, run again, reuses its id)."""
        ...

    def get(self, request_id: str) -> CapacityRecord | None: ...

    def create(
        self, record: CapacityRecord, audit: AuditEntry, schedule: Sequence[Job] = ()
    ) -> CapacityRecord: ...

    def save(
        self,
        old: CapacityRecord,
        new: CapacityRecord,
        audit: AuditEntry,
        schedule: Sequence[Job] = (),
        cancel: Sequence[str] = (),
    ) -> CapacityRecord: ...

    def in_state(self, state: State) -> list[CapacityRecord]: ...

    def for_user(self, user: str, limit: int = 20, offset: int = 0) -> list[CapacityRecord]: ...

    def count_for_user(self, user: str) -> int: ...

    def audit(
        self, request_id: str | None = None, limit: int = 100, newest: bool = False
    ) -> list[AuditEntry]: ...


class Cache(Protocol):
    """Short-lived values (approver group members, ...), gone after their TTL."""

    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str, ttl: timedelta) -> None: ...


class Deliveries(Protocol):
    """Delivery keys: which messages were sent already."""

    def delivered(self, key: str) -> bool: ...

    def mark_delivered(self, key: str, at: datetime) -> None: ...


class Store(Requests, JobQueue, Cache, Deliveries, DeliveryLog, Protocol):
    """Everything the services and the worker need of the store."""

    def ping(self) -> bool: ...
