"""The request flow's changes: open, ask for a quote, submit for approval, cancel, time out.

Every change is a compare-and-set in the store with its audit entry; on a conflict the
change is decided again on a fresh read, so concurrent clicks and replicas are safe.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.domain import events as on
from bot.domain.approval import SpendingPolicy, judge_budget
from bot.domain.grammar import render_request
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest, clean_text
from bot.domain.request_ids import normalise_id
from bot.domain.transitions import TransitionRefused, cancelled, submitted, timed_out
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.jobs import OpenJob, open_job, quote_only_job
from bot.services.ports import Clock, Intake, JobIntake, VersionConflict
from bot.services.spending import SpendLedger
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
        ledger: SpendLedger | None = None,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.intake = intake
        self.submissions = submissions
        self.clock = clock
        self.limits = limits
        self.ledger = ledger or SpendLedger(changes.store, now=changes.now)

    def open(
        self,
        user: str,
        request: CapacityRequest,
        response_url: str | None = None,
        *,
        delivery: str | None = None,
        on_error: OnError | None = None,
        channel: str | None = None,
    ) -> None:
        """Hand in a new request without waiting for Redis: a worker's `create_draft`
        stores it and queues its quote (AWS calls take seconds). The comparison goes to
        `response_url`, or to the requester by DM. A `delivery` (the Slack request's
        signature) handed in before is a replay: nothing is stored."""
        job = open_job(user, request, self.clock.now(), response_url, channel)
        self.intake.put(Intake(job, _once_key(delivery)), on_error)

    def quote_only(
        self,
        user: str,
        request: CapacityRequest,
        response_url: str | None,
        *,
        delivery: str | None = None,
        on_error: OnError | None = None,
        channel: str | None = None,
    ) -> None:
        """`/gpu quote`: a comparison with nothing stored but the job that makes it."""
        job = quote_only_job(user, request, self.clock.now(), response_url, channel)
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
            team=self.ledger.team_of(job.user, job.channel) if self.ledger.teams else None,
        )
        opened = on.Opened(job.response_url)
        try:
            return self.changes.create(Change(record, opened, "created", job.user, record.text))
        except VersionConflict:
            return None

    def submit(self, request_id: str, user: str, pick: str, reason: str) -> CapacityRecord:
        """quoted -> pending_approval; the card is posted by the notify job scheduled in
        the same step. `RequestError` says why not."""

        def submit(r: CapacityRecord) -> Change | None:
            chosen, deadline = self.submissions.check(r, user, pick, reason)
            picked = r.model_copy(update={"choice": chosen.choice()})
            budget = self.ledger.check(picked, chosen.most_usd)
            rule = self.ledger.over_budget
            spend = judge_budget(self.limits.judge(chosen.most_usd), budget, rule)
            if spend.refusal is not None:
                raise RequestError(spend.refusal[0].upper() + spend.refusal[1:] + ".", "choice")
            now = self.clock.now()
            step = submitted(
                r, chosen.choice(), clean_text(reason), spend.approvals, deadline, now, budget
            )
            return Change.of(step, "submitted", user, chosen.kind.value)

        saved, _ = self.changes.apply(normalise_id(request_id), submit)
        if saved is None:
            raise RequestError(f"There is no request {request_id}.")
        return saved

    def cancel(self, request_id: str, user: str) -> CapacityRecord:
        def cancel(r: CapacityRecord) -> Change | None:
            try:
                return Change.of(cancelled(r, user, self.clock.now()), "cancelled", user)
            except TransitionRefused as refused:
                raise RequestError(str(refused)) from refused

        saved, _ = self.changes.apply(normalise_id(request_id), cancel)
        if saved is None:
            raise RequestError(f"There is no request {request_id}.")
        return saved

    def time_out(self, request_id: str) -> CapacityRecord | None:
        """pending_approval -> timed_out; nothing when it was decided meanwhile."""

        def time_out(r: CapacityRecord) -> Change | None:
            step = timed_out(r, self.clock.now())
            return Change.of(step, "timed out", BOT, "no decision before the deadline")

        saved, change = self.changes.apply(request_id, time_out)
        return saved if change is not None else None
