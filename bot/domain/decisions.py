"""What people decide about a purchase, a request's or an extension's: who approved or
rejected it and when, and what a click on Approve or Reject came to."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Approval(_Frozen):
    user: str
    at: datetime


class Rejection(_Frozen):
    user: str
    at: datetime
    reason: str


class Outcome(StrEnum):
    APPROVED = "approved"  # the last approval needed: the purchase is approved
    PARTIAL = "partial"  # approval recorded, another approver is needed
    REJECTED = "rejected"
    NOT_APPROVER = "not_approver"
    OWN_REQUEST = "own_request"
    ALREADY_APPROVED_BY_YOU = "already_approved_by_you"
    NOT_PENDING = "not_pending"  # decided, cancelled or timed out already
    TOO_LATE = "too_late"  # past its approval deadline (the worker times it out)
    REASON_REQUIRED = "reason_required"
    REASON_TOO_LONG = "reason_too_long"
    # GPU_BOT_OVER_BUDGET=refuse: the approval would take the team over its budget.
    OVER_BUDGET = "over_budget"

    @property
    def changed(self) -> bool:
        return self in (Outcome.APPROVED, Outcome.PARTIAL, Outcome.REJECTED)
