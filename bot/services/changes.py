"""Applying a change to a request: read, decide, compare-and-set, decide again on a
conflict. Every change writes its audit entry and its jobs in the same step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.domain.audit import BOT, AuditEntry
from bot.domain.lifecycle import check_transition
from bot.domain.records import CapacityRecord
from bot.services.compare_and_set import compare_and_set
from bot.services.ports import Job, Store, VersionConflict

__all__ = ["BOT", "Change", "apply_change"]


@dataclass(frozen=True)
class Change:
    """A new version of a record and how to describe it in the audit trail."""

    record: CapacityRecord
    action: str
    actor: str
    detail: str = ""
    schedule: tuple[Job, ...] = ()
    cancel: tuple[str, ...] = ()
    usd: float | None = None  # the amount to audit when not the chosen total (a fee paid)


def apply_change(
    store: Store,
    request_id: str,
    decide: Callable[[CapacityRecord], Change | None],
    now: Callable[[], datetime],
) -> tuple[CapacityRecord | None, Change | None]:
    """Read, decide, compare-and-set; decide again on a conflict.

    `decide` returns None when nothing should change. Returns the stored record (or the
    current one when nothing changed) and the change that was applied, if any.
    """

    def write(record: CapacityRecord, change: Change) -> CapacityRecord:
        if change.record.state is not record.state:
            check_transition(record.state, change.record.state)  # a bug, never a user error
        audit = AuditEntry(
            request_id=request_id,
            actor=change.actor,
            action=change.action,
            from_state=record.state.value,
            to_state=change.record.state.value,
            at=now(),
            usd=change.usd if change.usd is not None else change.record.total_usd,
            detail=change.detail,
        )
        # A job scheduled here wakes a waiting worker in the same step.
        return store.save(record, change.record, audit, change.schedule, change.cancel)

    return compare_and_set(
        lambda: store.get(request_id), decide, write, VersionConflict, what=request_id
    )
