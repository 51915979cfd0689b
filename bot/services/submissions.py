"""Whether a request may be submitted for approval, checked the same way when the form
opens, before the form's ack (so mistakes come back on the form) and in the submit itself."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain.approval import SpendingPolicy
from bot.domain.choices import Candidate, candidate_by_value
from bot.domain.lifecycle import State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord
from bot.domain.request import MAX_REASON_CHARS, REASON_NEEDED, clean_text
from bot.services.ports import Clock


class RequestError(Exception):
    """A request cannot do what was asked; `field` names the form field at fault."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class SubmissionRules:
    def __init__(self, limits: SpendingPolicy, clock: Clock, approval_timeout: timedelta) -> None:
        self.limits = limits
        self.clock = clock
        self.approval_timeout = approval_timeout

    def submittable(self, record: CapacityRecord | None, user: str, asked: str) -> Quote:
        """The quote to pick from, when `user` may submit `record` (the request they
        named `asked`) now: it exists, is theirs and is quoted. Else `RequestError`."""
        if record is None:
            raise RequestError(f"There is no request {asked}.")
        return submittable_by(record, user)

    def check(
        self, record: CapacityRecord, user: str, pick: str, reason: str
    ) -> tuple[Candidate, datetime]:
        """The pick and approval deadline of a valid submission; `RequestError` (with the
        form field at fault) when it is not. Changes nothing."""
        reason = clean_text(reason)
        if not reason:
            raise RequestError(f"{REASON_NEEDED}: give one.", field="reason")
        if len(reason) > MAX_REASON_CHARS:
            raise RequestError(f"Keep the reason under {MAX_REASON_CHARS} characters.", "reason")
        quote = submittable_by(record, user)
        chosen = candidate_by_value(quote, pick)
        if chosen is None:
            raise RequestError("Pick one of the options offered.", field="choice")
        refusal = self.limits.refusal(chosen.most_usd)
        if refusal:
            raise RequestError(refusal[0].upper() + refusal[1:] + ".", field="choice")
        now = self.clock.now()
        deadline = approval_deadline(
            now + self.approval_timeout,
            record.request.start,
            record.request.end,
            chosen.offering.start if chosen.offering is not None else None,
            now,
        )
        if record.request.end <= now:
            raise RequestError(
                "The asked window has ended: quote again for a later start.", field="choice"
            )
        if deadline <= now:
            raise RequestError(
                "This option starts before anyone could approve it: quote again for a later start.",
                field="choice",
            )
        return chosen, deadline


def submittable_by(record: CapacityRecord, user: str) -> Quote:
    """The quote to pick from, when `user` may submit `record`; else `RequestError`."""
    if record.requester != user:
        raise RequestError(f"Request {record.id} is not yours to submit.", field="choice")
    if record.state is not State.QUOTED or record.quote is None:
        raise RequestError(f"Request {record.id} is {record.state.label} already.", "choice")
    return record.quote


def approval_deadline(
    timeout: datetime,
    start: datetime,
    end: datetime,
    offering_start: datetime | None,
    now: datetime,
) -> datetime:
    """When a request submitted `now` stops waiting for approvers: at `timeout`, and never
    after what it asks for begins. An offering (Capacity Block, plan) starts when it
    starts. An On-Demand, Spot or ODCR window starts when it was asked to: approved after
    that, the hours between are lost and the requester was told to wait for a start that
    has passed. A window asked to start at once (`from now`, or a start that passed while
    the quote waited) can only be approved after its start: it waits at most until its
    end, when approving it would buy nothing."""
    if offering_start is not None:
        return min(timeout, offering_start, end)
    if start > now:
        return min(timeout, start)
    return min(timeout, end)
