"""The outside world as the services see it: small interfaces the adapters implement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.adapters.store import Job
from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, SlackMessage


class Store(Protocol):
    """What the services need of the store (RedisStore, for redis:// and memory://).

    `create` and `save` are compare-and-sets that write the audit entry and the jobs in
    the same step; `save` raises VersionConflict when `old` is not the stored version.
    """

    def next_id(self) -> str: ...

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

    def for_user(self, user: str, limit: int = 20) -> list[CapacityRecord]: ...

    def audit(
        self, request_id: str | None = None, limit: int = 100, newest: bool = False
    ) -> list[AuditEntry]: ...

    def schedule(self, job: Job) -> None: ...

    def wake(self) -> None: ...

    def delivered(self, key: str) -> bool: ...

    def mark_delivered(self, key: str, at: datetime) -> None: ...

    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str, ttl: timedelta) -> None: ...


class Notifier(Protocol):
    """Tells people about requests (Slack in production, the console in the shell)."""

    def post_request(self, record: CapacityRecord) -> SlackMessage | None:
        """Post the approval card; returns where it was posted."""
        ...

    def update_request(self, record: CapacityRecord) -> None:
        """Re-render the approval card in place (no buttons once decided)."""
        ...

    def quote_ready(self, record: CapacityRecord, response_url: str | None) -> None:
        """Show the requester the comparison with Submit / Cancel (or why quoting
        failed) where they asked: the command's response_url, else a direct message."""
        ...

    def show_quote(self, user: str, response_url: str | None, quote: Quote) -> None:
        """Show a comparison that is not a request (`/gpu quote`)."""
        ...

    def reply(
        self,
        user: str,
        response_url: str | None,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        replace: bool = True,
    ) -> None:
        """Answer a user where they asked (a response_url), else by DM; `replace` the
        message at the response_url, or add one beside it."""
        ...

    def tell_requester(self, record: CapacityRecord) -> None:
        """A direct message to the requester about the request's new state."""
        ...


class GroupDirectory(Protocol):
    def members(self, group_id: str) -> list[str]:
        """User ids in a user group; raises on failure."""
        ...
