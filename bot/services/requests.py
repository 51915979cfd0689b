"""The request flow's changes: open, ask for a quote, submit for approval, cancel, time out.

Every change is a compare-and-set in the store with its audit entry; on a conflict the
change is decided again on a fresh read, so concurrent clicks and replicas are safe.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.domain import events as on
from bot.domain.approval import SpendingPolicy
from bot.domain.grammar import render_request
from bot.domain.lifecycle import CANCELLABLE, NOTHING_BOUGHT, State
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest, clean_text
from bot.domain.request_ids import normalise_id
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.jobs import OpenJob, open_job, quote_only_job
from bot.services.ports import Clock, Intake, JobIntake, VersionConflict
from bot.services.submissions import RequestError, SubmissionRules

__all__ = ["RequestError", "RequestService"]

OnError = Callable[[Exception], object]


def _once_key(delivery: str | None) -> str | None:
    return f"delivery:{delivery}" if delivery else None


class RequestService:
    """The changes people ask for; reading is `RequestQueries`, the quote jobs `QuoteJobs`."""

    def __init__(
        self,
        changes: RequestChanges,
        submissions: SubmissionRules,
        clock: Clock,
        limits: SpendingPolicy,
        intake: JobIntake,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.intake = intake
        self.submissions = submissions
        self.clock = clock
        self.limits = limits

    def open(
        self,
        user: str,
        request: CapacityRequest,
        response_url: str | None = None,
        *,
        delivery: str | None = None,
        on_error: OnError | None = None,
    ) -> None:
        """Hand in a new request without waiting for Redis: a worker's `create_draft`
        stores it and queues its quote (AWS calls take seconds). The comparison goes to
        `response_url`, or to the requester by DM. A `delivery` (the Slack request's
        signature) handed in before is a replay: nothing is stored."""
        job = open_job(user, request, self.clock.now(), response_url)
        self.intake.put(Intake(job, _once_key(delivery)), on_error)

    def quote_only(
        self,
        user: str,
        request: CapacityRequest,
        response_url: str | None,
        *,
        delivery: str | None = None,
        on_error: OnError | None = None,
    ) -> None:
        """`/gpu quote`: a comparison with nothing stored but the job that makes it."""
        job = quote_only_job(user, request, self.clock.now(), response_url)
        self.intake.put(Intake(job, _once_key(delivery)), on_error)

    def create_draft(self, job: OpenJob) -> CapacityRecord | None:
        """The `open` job: the draft, its audit entry and its quote job in one write.
        Run again (its worker died), it finds its id taken and leaves the draft as the
        first run stored it; None then."""
        now = self.clock.now()
        record = CapacityRecord(
            id=self.store.id_for(f"open:{job.key}"),
            state=State.DRAFT,
            requester=job.user,
            created_at=job.asked_at,
            updated_at=now,
            request=job.request,
            text=render_request(job.request.draft()),
            reason=job.request.reason,
        )
        opened = on.Opened(job.response_url)
        try:
            return self.changes.create(Change(record, opened, "created", job.user, record.text))
        except VersionConflict:
            return None

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
            return Change(new, on.Submitted(), "submitted", user, chosen.kind.value)

        saved, _ = self.changes.apply(normalise_id(request_id), submitted)
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
            return Change(new, on.Cancelled(), "cancelled", user)

        saved, _ = self.changes.apply(normalise_id(request_id), cancelled)
        if saved is None:
            raise RequestError(f"There is no request {request_id}.")
        return saved

    def time_out(self, request_id: str) -> CapacityRecord | None:
        """pending_approval -> timed_out; nothing when it was decided meanwhile."""

        def timed_out(r: CapacityRecord) -> Change | None:
            if r.state is not State.PENDING_APPROVAL:
                return None
            new = r.model_copy(update={"state": State.TIMED_OUT, "updated_at": self.clock.now()})
            why = "no decision before the deadline"
            return Change(new, on.TimedOut(), "timed out", BOT, why)

        saved, change = self.changes.apply(request_id, timed_out)
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
