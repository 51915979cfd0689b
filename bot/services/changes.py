"""Changing a request: read, decide, compare-and-set, decide again on a conflict.

Every change names the event it is (bot.domain.events). Its audit entry and the jobs
the event causes (looked up in the one table, bot.services.reactions) are written in
the same step; what the table says follows the write (metrics, notes) comes after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from bot.domain.audit import BOT, AuditEntry
from bot.domain.events import Event, Noted
from bot.domain.ledger import settle
from bot.domain.lifecycle import check_transition
from bot.domain.records import CapacityRecord
from bot.domain.transitions import Transition
from bot.services.compare_and_set import compare_and_set
from bot.services.ports import Store, VersionConflict

if TYPE_CHECKING:  # the table imports the flows' job kinds, and they import this module
    from bot.services.reactions import Reactions

__all__ = ["BOT", "Change", "RequestChanges"]


@dataclass(frozen=True)
class Change:
    """A new version of a record, the event it is, and how the audit trail says it."""

    record: CapacityRecord
    event: Event
    action: str
    actor: str
    detail: str = ""
    usd: float | None = None  # the amount to audit when not the chosen total (a fee paid)
    # Cents the team-month's held and paid may reach with this change (an approval judged
    # within budget): the store refuses the write past it, and the change is decided again.
    budget_guard: int | None = None

    @classmethod
    def of(
        cls,
        step: Transition | None,
        action: str,
        actor: str,
        detail: str = "",
        usd: float | None = None,
    ) -> Change | None:
        """A domain transition (None: it no longer applies) as the change to write."""
        if step is None:
            return None
        return cls(step.record, step.event, action, actor, detail, usd)


class RequestChanges:
    """The one way requests are created and changed. Every change is settled through the
    ledger (bot.domain.ledger.settle) before it is written: the money entries it causes go
    in the same compare-and-set."""

    def __init__(self, store: Store, reactions: Reactions, now: Callable[[], datetime]) -> None:
        self.store = store
        self.reactions = reactions
        self.now = now

    def apply(
        self, request_id: str, decide: Callable[[CapacityRecord], Change | None]
    ) -> tuple[CapacityRecord | None, Change | None]:
        """`decide` returns None when nothing should change. Returns the stored record
        (or the current one when nothing changed) and the change that was applied."""

        over: list[CapacityRecord] = []  # the record the written change was decided on

        def write(record: CapacityRecord, change: Change) -> CapacityRecord:
            over[:] = [record]
            if change.record.state is not record.state:
                check_transition(record.state, change.record.state)  # a bug, never a user error
            new = settle(change.record, self.now(), change.action)
            jobs = self.reactions.jobs(change.event, record, new)
            # A job scheduled here wakes a waiting worker in the same step.
            return self.store.save(
                record,
                new,
                self._audit(record, change),
                jobs.schedule,
                jobs.cancel,
                budget_guard=change.budget_guard,
            )

        def read() -> CapacityRecord | None:
            return self.store.get(request_id)

        result = compare_and_set(read, decide, write, VersionConflict, what=request_id)
        saved, change = result
        if saved is not None and change is not None:
            self._after(change.event, over[0], saved)
        return saved, change

    def create(self, change: Change) -> CapacityRecord:
        """Store a new record (`VersionConflict` if its id exists), with what its event
        causes."""
        record = settle(change.record, self.now(), change.action)
        jobs = self.reactions.jobs(change.event, None, record)
        saved = self.store.create(record, self._audit(record, change), jobs.schedule)
        self._after(change.event, None, saved)
        return saved

    def note(
        self,
        request_id: str,
        action: str,
        detail: str,
        actor: str = BOT,
        usd: float | None = None,
    ) -> None:
        """An audit entry that changes nothing else."""
        self.apply(request_id, lambda r: Change(r, Noted(), action, actor, detail, usd))

    def _audit(self, old: CapacityRecord, change: Change) -> AuditEntry:
        new = change.record
        return AuditEntry(
            request_id=new.id,
            actor=change.actor,
            action=change.action,
            from_state=old.state.value,
            to_state=new.state.value,
            at=self.now(),
            usd=change.usd if change.usd is not None else new.total_usd,
            detail=change.detail,
        )

    def _after(self, event: Event, old: CapacityRecord | None, new: CapacityRecord) -> None:
        for action, detail in self.reactions.after(event, old, new):
            self.note(new.id, action, detail)
