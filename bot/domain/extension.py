"""Extending a reservation: when AWS allows it, what is on offer, and the request to buy it.

An extension is a purchase: the same spending policy (its fee, and the request's total
after it), the same approval rule (enough allowed approvers, none of them the person
asking or the requester), bought at most once (an attempt with a lease, AWS asked before
buying, an unknown outcome reconciled and never bought again), refused when the price
moved above what was approved. Sources: EC2 User Guide, "Extend Capacity Blocks"
(DescribeCapacityBlockExtensionOfferings / PurchaseCapacityBlockExtension) and the
SageMaker training plan API (SearchTrainingPlanOfferings with TrainingPlanArn,
ExtendTrainingPlan).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from bot.domain.budgets import BudgetCheck, OverBudget, judge_approval
from bot.domain.decisions import Approval, Outcome
from bot.domain.offering_rules import CB_MAX_DAYS, capacity_block_duration_valid

if TYPE_CHECKING:  # approval reads records, which read this module
    from bot.domain.approval import SpendingPolicy

# A Capacity Block can be extended between 1 hour and 56 days before it expires.
EXTEND_LATEST = timedelta(hours=1)
EXTEND_EARLIEST = timedelta(days=56)
EXTENDABLE_KINDS = frozenset({"capacity-block", "training-plan"})
DEFAULT_EXTENSION_HOURS = 24


class ExtensionPayment(StrEnum):
    """Where AWS says an extension's payment stands (CapacityBlockExtensionStatus;
    a training plan extension's PaymentStatus)."""

    PAID = "paid"
    PENDING = "pending"
    FAILED = "failed"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtensionOffer(_Frozen):
    """One extension AWS offers for a reservation."""

    offering_id: str
    hours: int
    start: datetime  # the current end
    end: datetime  # the new end
    fee_usd: float
    currency: str = "USD"


class ExtensionStatus(StrEnum):
    PENDING_APPROVAL = "pending_approval"
    APPROVED = "approved"
    PURCHASING = "purchasing"
    BOUGHT = "bought"
    REJECTED = "rejected"
    FAILED = "failed"  # with the reason (price moved, offer gone, AWS error): nothing bought
    # AWS took the order and is processing the payment: the new end counts only once AWS
    # says paid; a failed payment leaves the old end (EC2 User Guide, "Extend Capacity
    # Blocks", Billing: payment-failed after 12 hours or 35 minutes before the end).
    PAYMENT_PENDING = "payment_pending"
    # The purchase call got no certain answer and AWS does not show the new end (yet):
    # looked for again, never bought again; an approver can mark it failed.
    UNKNOWN = "purchase_unknown"

    @property
    def open(self) -> bool:
        return self in (
            ExtensionStatus.PENDING_APPROVAL,
            ExtensionStatus.APPROVED,
            ExtensionStatus.PURCHASING,
            ExtensionStatus.UNKNOWN,
            # AWS refuses another extension while one is payment-pending.
            ExtensionStatus.PAYMENT_PENDING,
        )


class Extension(_Frozen):
    """An extension asked for on a request (CapacityRecord.extension; the latest one)."""

    number: int  # 1 for the first extension of the request, 2 for the next, ...
    offer: ExtensionOffer
    requested_by: str
    requested_at: datetime
    status: ExtensionStatus = ExtensionStatus.PENDING_APPROVAL
    approved_by: str | None = None  # who decided it (the last approval, or the rejection)
    decided_at: datetime | None = None
    reason: str = ""  # why it was rejected or failed
    card_channel: str | None = None  # where the approvers' card was posted
    card_ts: str | None = None
    # The spending policy's verdict when it was asked for, and the approvals so far.
    required_approvals: int = 1
    approvals: tuple[Approval, ...] = ()
    paid_before_usd: float = 0.0  # what the request had cost when this was asked for
    budget: BudgetCheck | None = None  # the team's month, as the approvers were shown it
    # The purchase attempt: past `lease_until` the job that made it is presumed gone.
    attempt_at: datetime | None = None
    lease_until: datetime | None = None

    @property
    def key(self) -> str:
        """Unique per extension of a request: its delivery keys and job ids use it."""
        return f"x{self.number}"


def extension_refusal(kind: str, start: datetime, end: datetime, now: datetime) -> str | None:
    """Why this reservation cannot be extended now, or None."""
    if kind not in EXTENDABLE_KINDS:
        return "only Capacity Blocks and training plans can be extended"
    left = end - now
    if left < EXTEND_LATEST:
        return "it ends in less than an hour: AWS no longer extends it"
    if left > EXTEND_EARLIEST:
        return "it ends more than 56 days from now: AWS extends it from 56 days before the end"
    if (end - start) >= timedelta(days=CB_MAX_DAYS):
        return "it already lasts 182 days, the longest AWS allows"
    return None


def beyond_the_limit(offer: ExtensionOffer, paid_usd: float, policy: SpendingPolicy) -> str | None:
    """Why no extension can be asked for when even `offer` (the shortest AWS sells: a
    day) would take the request's total above the limit for one request, or None. A
    Capacity Block is extended by whole days, so nothing shorter could fit."""
    if policy.judge(offer.fee_usd, paid_before_usd=paid_usd).refusal is None:
        return None
    cap = policy.max_request_usd or 0.0
    return (
        f"one more day costs ${offer.fee_usd:,.2f} and would take it to "
        f"${paid_usd + offer.fee_usd:,.2f} in all, above the ${cap:,.2f} limit for one "
        "request (nothing shorter than a day can be bought): ask for a new request instead"
    )


def extension_hours_valid(current_hours: int, extra_hours: int) -> bool:
    """Same duration steps as a purchase, and at most 182 days in all."""
    return (
        capacity_block_duration_valid(extra_hours)
        and current_hours + extra_hours <= CB_MAX_DAYS * 24
    )


def price_moved(approved: ExtensionOffer, current: ExtensionOffer) -> bool:
    """Refuse to buy above the approved fee, or a different window than was approved."""
    return current.fee_usd > approved.fee_usd + 0.005 or current.end != approved.end


def approver_refusal(
    extension: Extension, user: str, is_approver: bool, requester: str
) -> str | None:
    """The money rule, for extensions: an allowed approver who is not the person asking
    (nor the requester), and who has not approved it already."""
    if extension.status is not ExtensionStatus.PENDING_APPROVAL:
        return f"this extension is already {extension.status.value.replace('_', ' ')}"
    if user in (extension.requested_by, requester):
        return "you cannot approve or reject an extension of your own reservation"
    if not is_approver:
        return "only approvers can approve or reject an extension"
    if any(a.user == user for a in extension.approvals):
        return "you approved this extension already: it needs another approver"
    return None


@dataclass(frozen=True)
class ExtensionDecision:
    outcome: Outcome
    extension: Extension  # the new extension when changed, else the one given
    budget_guard: int | None = None  # see bot.domain.budgets.judge_approval


def decide(
    extension: Extension,
    user: str,
    is_approver: bool,
    requester: str,
    approve: bool,
    reason: str,
    now: datetime,
    budget: BudgetCheck | None = None,
    over_budget: OverBudget = OverBudget.SECOND_APPROVAL,
) -> ExtensionDecision:
    """An Approve or Reject of an extension, as `bot.domain.approval` decides a request's:
    the last approval needed approves it, an earlier one is recorded (PARTIAL); the team's
    budget (`budget`: where the extension takes its month now) is judged at the decisive
    approval, as a request's is."""
    if extension.status is not ExtensionStatus.PENDING_APPROVAL:
        return ExtensionDecision(Outcome.NOT_PENDING, extension)
    if user in (extension.requested_by, requester):
        return ExtensionDecision(Outcome.OWN_REQUEST, extension)
    if not is_approver:
        return ExtensionDecision(Outcome.NOT_APPROVER, extension)
    if any(a.user == user for a in extension.approvals):
        return ExtensionDecision(Outcome.ALREADY_APPROVED_BY_YOU, extension)
    if not approve:
        rejected = extension.model_copy(
            update={
                "status": ExtensionStatus.REJECTED,
                "approved_by": user,
                "decided_at": now,
                "reason": reason,
            }
        )
        return ExtensionDecision(Outcome.REJECTED, rejected)
    approvals = (*extension.approvals, Approval(user=user, at=now))
    verdict = judge_approval(len(approvals), extension.required_approvals, budget, over_budget)
    if verdict.refused:
        return ExtensionDecision(Outcome.OVER_BUDGET, extension)
    done = len(approvals) >= verdict.needed
    update: dict[str, object] = {"approvals": approvals, "required_approvals": verdict.needed}
    if budget is not None:
        update["budget"] = budget
    if done:
        update |= {"status": ExtensionStatus.APPROVED, "approved_by": user, "decided_at": now}
    return ExtensionDecision(
        Outcome.APPROVED if done else Outcome.PARTIAL,
        extension.model_copy(update=update),
        verdict.guard,
    )
