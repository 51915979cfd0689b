"""The request flow: open, quote, submit for approval, cancel, time out.

Every change is a compare-and-set in the store with its audit entry; on a conflict the
change is decided again on a fresh read, so concurrent clicks and replicas are safe.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from bot.domain.approval import SpendingLimits
from bot.domain.audit import AuditEntry
from bot.domain.choices import Pick, pick_by_value
from bot.domain.grammar import render_request
from bot.domain.lifecycle import CANCELLABLE, State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord
from bot.domain.request import MAX_REASON_CHARS, CapacityRequest, clean_text
from bot.services.changes import BOT, Change, apply_change
from bot.services.jobs import (
    QuoteJob,
    QuoteOnlyJob,
    notify_job,
    quote_job,
    quote_only_job,
    timeout_job,
    timeout_job_id,
)
from bot.services.ports import Clock, Notifier, Store
from bot.services.quoting import QuoteService

log = logging.getLogger(__name__)


class RequestError(Exception):
    """A request cannot do what was asked; `field` names the form field at fault."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class RequestService:
    def __init__(
        self,
        store: Store,
        quotes: QuoteService,
        notifier: Notifier,
        clock: Clock,
        limits: SpendingLimits,
        approval_timeout: timedelta,
    ) -> None:
        self.store = store
        self.quotes = quotes
        self.notifier = notifier
        self.clock = clock
        self.limits = limits
        self.approval_timeout = approval_timeout

    # --- reading ----------------------------------------------------------------------

    def get(self, request_id: str) -> CapacityRecord | None:
        return self.store.get(normalise_id(request_id))

    def mine(self, user: str, limit: int = 20) -> list[CapacityRecord]:
        return self.store.for_user(user, limit)

    def history(self, request_id: str, last: int = 10) -> list[AuditEntry]:
        """The request's latest audit entries, oldest first."""
        return self.store.audit(request_id, limit=last, newest=True)

    # --- flow -------------------------------------------------------------------------

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
        created = self.store.create(
            record, audit, schedule=[quote_job(record.id, now, response_url)]
        )
        self.store.wake()
        return created

    def quote_only(self, user: str, request: CapacityRequest, response_url: str | None) -> None:
        """`/gpu quote`: a comparison with nothing stored but the job that makes it."""
        self.store.schedule(quote_only_job(user, request, self.clock.now(), response_url))
        self.store.wake()

    def run_quote_only(self, job: QuoteOnlyJob) -> None:
        """The `quote-only` job."""
        quote = self.quotes.quote(job.request)
        self.notifier.show_quote(job.user, job.response_url or None, quote)

    def run_quote(self, job: QuoteJob) -> CapacityRecord | None:
        """The quote job: quote a draft, then show the result. Safe to run twice: a
        second run finds the request quoted and shows the same comparison again (Slack
        replaces the message at a response_url)."""
        record = self.store.get(job.request)
        if record is None:
            return None
        if record.state is State.DRAFT:
            record = self.quote(record)
        if record.state in (State.QUOTED, State.FAILED):
            self.notifier.quote_ready(record, job.response_url or None)
        return record

    def quote(self, record: CapacityRecord) -> CapacityRecord:
        """draft -> quoted with the comparison, or -> failed with what went wrong."""
        try:
            quote = self.quotes.quote(record.request)
        except Exception as exc:
            log.exception("quoting %s failed", record.id)
            failure = f"quoting failed: {exc}"

            def fail(r: CapacityRecord) -> Change | None:
                if r.state is not State.DRAFT:
                    return None
                new = r.model_copy(update={"state": State.FAILED, "failure": failure})
                return Change(new, "failed", BOT, failure)

            saved, _ = apply_change(self.store, record.id, fail, self.clock.now)
            assert saved is not None
            return saved

        def quoted(r: CapacityRecord) -> Change | None:
            if r.state is not State.DRAFT:
                return None
            new = r.model_copy(
                update={"state": State.QUOTED, "quote": quote, "updated_at": self.clock.now()}
            )
            kind = quote.recommendation.kind
            return Change(new, "quoted", BOT, f"recommended {kind.value if kind else 'nothing'}")

        saved, _ = apply_change(self.store, record.id, quoted, self.clock.now)
        assert saved is not None
        return saved

    def submittable(self, request_id: str, user: str) -> tuple[CapacityRecord, Quote]:
        """The request and the quote to pick from, when `user` may submit it for
        approval now (it is theirs and quoted); `RequestError` says why not."""
        record = self.get(request_id)
        if record is None:
            raise RequestError(f"There is no request {request_id}.")
        return record, _submittable_by(record, user)

    def check_submission(
        self, record: CapacityRecord, user: str, pick: str, reason: str
    ) -> tuple[Pick, datetime]:
        """The pick and approval deadline of a valid submission; `RequestError` (with the
        form field at fault) when it is not. Changes nothing."""
        reason = clean_text(reason)
        if not reason:
            raise RequestError("Give the approvers a reason.", field="reason")
        if len(reason) > MAX_REASON_CHARS:
            raise RequestError(f"Keep the reason under {MAX_REASON_CHARS} characters.", "reason")
        quote = _submittable_by(record, user)
        chosen = pick_by_value(quote, pick)
        if chosen is None:
            raise RequestError("Pick one of the options offered.", field="choice")
        refusal = self.limits.refusal(chosen.most_usd)
        if refusal:
            raise RequestError(refusal[0].upper() + refusal[1:] + ".", field="choice")
        now = self.clock.now()
        deadline = now + self.approval_timeout
        if chosen.offering is not None:
            # An offering cannot wait: it starts when it starts. On-Demand and Spot can.
            deadline = min(deadline, chosen.offering.start)
        if deadline <= now:
            raise RequestError(
                "This option starts before anyone could approve it: quote again for a later start.",
                field="choice",
            )
        return chosen, deadline

    def submit(self, request_id: str, user: str, pick: str, reason: str) -> CapacityRecord:
        """quoted -> pending_approval; the card is posted by the notify job scheduled in
        the same step. `RequestError` says why not."""

        def submitted(r: CapacityRecord) -> Change:
            chosen, deadline = self.check_submission(r, user, pick, reason)
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
            if r.state not in CANCELLABLE:
                if r.state.final:
                    raise RequestError(f"Request {r.id} is {r.state.label} already.")
                raise RequestError(
                    f"Request {r.id} is {r.state.label}: only requests that are not approved "
                    "yet can be cancelled."
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


def _submittable_by(record: CapacityRecord, user: str) -> Quote:
    """The quote to pick from, when `user` may submit `record`; else `RequestError`."""
    if record.requester != user:
        raise RequestError(f"Request {record.id} is not yours to submit.", field="choice")
    if record.state is not State.QUOTED or record.quote is None:
        raise RequestError(f"Request {record.id} is {record.state.label} already.", "choice")
    return record.quote


def normalise_id(text: str) -> str:
    """`r12`, `R12` and `12` all name request R12."""
    text = text.strip().upper()
    return text if text.startswith("R") else f"R{text}"
