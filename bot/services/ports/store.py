"""The store as the services see it (RedisStore implements it, for redis:// and memory://)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from bot.domain.audit import AuditEntry
from bot.domain.budgets import TeamMonth
from bot.domain.ledger import Closed, SpendRow
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


class BudgetMoved(VersionConflict):
    """The team's month moved past the budget a decision relied on (another approval
    came first): decide again on the fresh totals."""


class Requests(Protocol):
    """Requests and their audit trail.

    `create` and `save` are compare-and-sets that write the audit entry, the jobs and
    what the ledger keeps beside the record (bot.domain.ledger.Projection) in the same
    step, and wake a waiting worker when they schedule any (no `wake` call needed after
    them); `save` raises VersionConflict when `old` is not the stored version, and
    BudgetMoved when `budget_guard` (cents) is given and the team-month's held and paid
    would go past it.
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
        budget_guard: int | None = None,
    ) -> CapacityRecord: ...

    def get_many(self, ids: Sequence[str]) -> list[CapacityRecord]: ...

    def index_ledger(self, now: datetime) -> int:
        """Index the records written before the ledger (once; idempotent)."""
        ...

    def in_state(self, state: State) -> list[CapacityRecord]: ...

    def for_user(self, user: str, limit: int = 20, offset: int = 0) -> list[CapacityRecord]: ...

    def count_for_user(self, user: str) -> int: ...

    def for_user_in_states(
        self, user: str, states: Iterable[State], limit: int = 50
    ) -> list[CapacityRecord]:
        """The user's newest `limit` requests in `states` (read without the others)."""
        ...

    def audit(
        self, request_id: str | None = None, limit: int = 100, newest: bool = False
    ) -> list[AuditEntry]: ...


class MoneyIndex(Protocol):
    """What the ledger keeps beside the records, so that nothing on a Slack path reads
    every record: team-month totals, a month's spend rows, what waits for approvers, and
    each team's last closed reservations."""

    def team_month(self, team: str, month: str) -> TeamMonth: ...

    def month_totals(self, month: str) -> dict[str, TeamMonth]: ...

    def month_rows(
        self, month: str, teams: Sequence[str], limit: int | None = None
    ) -> tuple[dict[str, int], list[SpendRow]]:
        """How many rows each team has in the month, and the first `limit` rows (all:
        None), team by team in the order given, each team's by start."""
        ...

    def waiting_for(
        self, user: str, offset: int = 0, limit: int | None = None
    ) -> tuple[list[str], int]:
        """The ids waiting for approvers that `user` may act on (not their own, not
        approved by them already), oldest first, from `offset`, and how many there are."""
        ...

    def closed_of(self, team: str) -> list[Closed]:
        """The team's last closed reservations (by start), newest first."""
        ...


class Cache(Protocol):
    """Short-lived values (approver group members, ...), gone after their TTL."""

    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str, ttl: timedelta) -> None: ...


class Deliveries(Protocol):
    """Delivery keys: which messages were sent already."""

    def delivered(self, key: str) -> bool: ...

    def mark_delivered(self, key: str, at: datetime) -> None: ...


class Store(Requests, MoneyIndex, JobQueue, Cache, Deliveries, DeliveryLog, Protocol):
    """Everything the services and the worker need of the store."""

    def ping(self) -> bool: ...
