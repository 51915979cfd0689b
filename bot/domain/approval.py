"""Who may approve what, and what an Approve or Reject click does to a request.

Money rule: nothing moves past pending_approval without enough approvals from allowed
approvers who are not the requester. These functions are pure; the store applies their
result as a compare-and-set, so a click decided on a stale read is retried or refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from bot.domain.lifecycle import State
from bot.domain.records import Approval, CapacityRecord, Rejection
from bot.domain.request import MAX_REASON_CHARS, clean_text


@dataclass(frozen=True)
class SpendingLimits:
    """Limits on the most a request can cost (pay-as-you-go at 100% of its window), not on
    the requester's own utilisation estimate, which nothing holds them to."""

    second_approval_usd: float | None = None
    max_request_usd: float | None = None

    def __post_init__(self) -> None:
        for value in (self.second_approval_usd, self.max_request_usd):
            # NaN compares false with everything and would switch a rule off.
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"a spending limit must be a finite amount above zero: {value}")

    def approvals_needed(self, most_usd: float) -> int:
        if not math.isfinite(most_usd):
            return 2
        if self.second_approval_usd is not None and most_usd > self.second_approval_usd:
            return 2
        return 1

    def refusal(self, most_usd: float) -> str | None:
        """Why a request that can cost up to `most_usd` may not even be posted, or None."""
        if self.max_request_usd is None:
            return None
        if not math.isfinite(most_usd) or most_usd > self.max_request_usd:
            return (
                f"this request can cost up to ${most_usd:,.2f} (running the whole window), "
                f"above the ${self.max_request_usd:,.2f} limit for one request: ask for fewer "
                "instances or a shorter window, or split it"
            )
        return None


class Outcome(StrEnum):
    APPROVED = "approved"  # the last approval needed: the request is approved
    PARTIAL = "partial"  # approval recorded, another approver is needed
    REJECTED = "rejected"
    NOT_APPROVER = "not_approver"
    OWN_REQUEST = "own_request"
    ALREADY_APPROVED_BY_YOU = "already_approved_by_you"
    NOT_PENDING = "not_pending"  # decided, cancelled or timed out already
    TOO_LATE = "too_late"  # past its approval deadline (the worker times it out)
    REASON_REQUIRED = "reason_required"
    REASON_TOO_LONG = "reason_too_long"

    @property
    def changed(self) -> bool:
        return self in (Outcome.APPROVED, Outcome.PARTIAL, Outcome.REJECTED)


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    record: CapacityRecord  # the new record when changed, else the one given


def refusal(record: CapacityRecord, user: str, is_approver: bool, now: datetime) -> Outcome | None:
    if record.state is not State.PENDING_APPROVAL:
        return Outcome.NOT_PENDING
    if record.approval_deadline is not None and now >= record.approval_deadline:
        return Outcome.TOO_LATE
    if now >= record.request.end:
        # Older records were given deadlines past the window; a window gone is gone.
        return Outcome.TOO_LATE
    if user == record.requester:
        return Outcome.OWN_REQUEST
    if not is_approver:
        return Outcome.NOT_APPROVER
    return None


def approve(record: CapacityRecord, user: str, is_approver: bool, now: datetime) -> Decision:
    refused = refusal(record, user, is_approver, now)
    if refused is not None:
        return Decision(refused, record)
    if user in record.approvers:
        return Decision(Outcome.ALREADY_APPROVED_BY_YOU, record)
    approvals = (*record.approvals, Approval(user=user, at=now))
    done = len(approvals) >= record.required_approvals
    updated = record.model_copy(
        update={
            "approvals": approvals,
            "state": State.APPROVED if done else State.PENDING_APPROVAL,
            "updated_at": now,
        }
    )
    return Decision(Outcome.APPROVED if done else Outcome.PARTIAL, updated)


def reject(
    record: CapacityRecord, user: str, is_approver: bool, reason: str, now: datetime
) -> Decision:
    refused = refusal(record, user, is_approver, now)
    if refused is not None:
        return Decision(refused, record)
    given = rejection_reason(reason)
    if given is None:
        return Decision(Outcome.REASON_REQUIRED, record)
    if len(given) > MAX_REASON_CHARS:
        return Decision(Outcome.REASON_TOO_LONG, record)
    updated = record.model_copy(
        update={
            "state": State.REJECTED,
            "rejection": Rejection(user=user, at=now, reason=given),
            "updated_at": now,
        }
    )
    return Decision(Outcome.REJECTED, updated)


def rejection_reason(text: str) -> str | None:
    """The reason a rejection records, as one clean line; None when there is none (a
    rejection needs one; NUL, newlines and other invisible characters are none)."""
    return clean_text(text) or None
