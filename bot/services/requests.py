"""The request flow's changes: open, ask for a quote, submit for approval, cancel, time out.

Every change is a compare-and-set in the store with its audit entry; on a conflict the
change is decided again on a fresh read, so concurrent clicks and replicas are safe.
"""

from __future__ import annotations

from datetime import datetime

from bot.domain.approval import SpendingLimits
from bot.domain.audit import AuditEntry
from bot.domain.grammar import render_request
from bot.domain.lifecycle import CANCELLABLE, NOTHING_BOUGHT, State
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest, clean_text
from bot.domain.request_ids import normalise_id
from bot.services.changes import BOT, Change, apply_change
from bot.services.jobs import (
    notify_job,
    quote_job,
    quote_only_job,
    timeout_job,
    timeout_job_id,
)
from bot.services.ports import Clock, Store
from bot.services.submissions import RequestError, SubmissionRules

__all__ = ["RequestError", "RequestService"]


class RequestService:
    """The changes people ask for; reading is `RequestQueries`, the quote jobs `QuoteJobs`."""

    def __init__(
        self, store: Store, submissions: SubmissionRules, clock: Clock, limits: SpendingLimits
    ) -> None:
        self.store = store
        self.submissions = submissions
        self.clock = clock
        self.limits = limits

    def open(
        self, user: str, request: CapacityRequest, response_url: str | None = None
    ) -> CapacityRecord:
        """A new draft, and a job to quote it (AWS calls take seconds: a worker runs it,
        and a worker that dies leaves the job to another). The comparison goes to
        `response_url`, or to the requester by DM."""
        now = self.clock.now()
        record = CapacityRecord(
            id=self.store.next_id(),
            state=State.DRAFT,
            requester=user,
            created_at=now,
            updated_at=now,
            request=request,
            text=render_request(request.draft()),
            reason=request.reason,
        )
        audit = AuditEntry(
            request_id=record.id,
            actor=user,
            action="created",
            from_state=State.DRAFT.value,
            to_state=State.DRAFT.value,
            at=now,
            detail=record.text,
        )
        # One round trip: the record, its audit entry, the quote job and a worker's wake-up.
        return self.store.create(record, audit, schedule=[quote_job(record.id, now, response_url)])

    def quote_only(self, user: str, request: CapacityRequest, response_url: str | None) -> None:
        """`/gpu quote`: a comparison with nothing stored but the job that makes it."""
        self.store.schedule(quote_only_job(user, request, self.clock.now(), response_url))
        self.store.wake()

    def submit(self, request_id: str, user: str, pick: str, reason: str) -> CapacityRecord:
        """quoted -> pending_approval; the card is posted by the notify job scheduled in
        the same step. `RequestError` says why not."""

        def submitted(r: CapacityRecord) -> Change:
            chosen, deadline = self.submissions.check(r, user, pick, reason)
            new = r.model_copy(
                update={
                    "state": State.PENDING_APPROVAL,
                    "choice": chosen.choice(),
                    "reason": clean_text(reason),
                    "required_approvals": self.limits.approvals_needed(chosen.most_usd),
                    "approval_deadline": deadline,
                    "updated_at": self.clock.now(),
                }
            )
            jobs = (timeout_job(r.id, deadline), notify_job(r.id, self.clock.now()))
            return Change(new, "submitted", user, chosen.kind.value, schedule=jobs)

        saved, _ = apply_change(self.store, normalise_id(request_id), submitted, self.clock.now)
        if saved is None:
            raise RequestError(f"There is no request {request_id}.")
        return saved

    def cancel(self, request_id: str, user: str) -> CapacityRecord:
        def cancelled(r: CapacityRecord) -> Change:
            if r.requester != user:
                raise RequestError(f"Only the requester can cancel {r.id}.")
            if r.state not in CANCELLABLE and not _window_not_open(r, self.clock.now()):
                if r.state.final:
                    raise RequestError(f"Request {r.id} is {r.state.label} already.")
                raise RequestError(
                    f"Request {r.id} is {r.state.label}: only requests that are not approved "
                    "yet (or On-Demand and Spot before their window opens) can be cancelled."
                )
            new = r.model_copy(update={"state": State.CANCELLED, "updated_at": self.clock.now()})
            return Change(
                new,
                "cancelled",
                user,
                schedule=(notify_job(r.id, self.clock.now()),),
                cancel=(timeout_job_id(r.id),),
            )

        saved, _ = apply_change(self.store, normalise_id(request_id), cancelled, self.clock.now)
        if saved is None:
            raise RequestError(f"There is no request {request_id}.")
        return saved

    def time_out(self, request_id: str) -> CapacityRecord | None:
        """pending_approval -> timed_out; nothing when it was decided meanwhile."""

        def timed_out(r: CapacityRecord) -> Change | None:
            if r.state is not State.PENDING_APPROVAL:
                return None
            new = r.model_copy(update={"state": State.TIMED_OUT, "updated_at": self.clock.now()})
            notify = notify_job(r.id, self.clock.now())
            return Change(new, "timed out", BOT, "no decision before the deadline", (notify,))

        saved, change = apply_change(self.store, request_id, timed_out, self.clock.now)
        return saved if change is not None else None


def _window_not_open(record: CapacityRecord, now: datetime) -> bool:
    """An On-Demand or Spot request scheduled for a window not open yet: nothing was
    bought, so cancelling it costs nothing (its reminders go with it)."""
    return (
        record.state is State.SCHEDULED
        and record.reservation is None
        and record.choice is not None
        and record.choice.kind.value in NOTHING_BOUGHT
        and now < record.request.start
    )
