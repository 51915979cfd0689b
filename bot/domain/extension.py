"""Extending a reservation: when AWS allows it, what is on offer, and the request to buy it.

An extension is bought like a purchase: it is approved by an allowed approver who is not
the person asking, it is bought at most once, and it is refused when the price moved
above what was approved. Sources: EC2 User Guide, "Extend Capacity Blocks"
(DescribeCapacityBlockExtensionOfferings / PurchaseCapacityBlockExtension) and the
SageMaker training plan API (SearchTrainingPlanOfferings with TrainingPlanArn,
ExtendTrainingPlan).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from bot.domain.offering_rules import CB_MAX_DAYS, capacity_block_duration_valid

# A Capacity Block can be extended between 1 hour and 56 days before it expires.
EXTEND_LATEST = timedelta(hours=1)
EXTEND_EARLIEST = timedelta(days=56)
EXTENDABLE_KINDS = frozenset({"capacity-block", "training-plan"})
DEFAULT_EXTENSION_HOURS = 24


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
    FAILED = "failed"  # with the reason (price moved, offer gone, AWS error)

    @property
    def open(self) -> bool:
        return self in (
            ExtensionStatus.PENDING_APPROVAL,
            ExtensionStatus.APPROVED,
            ExtensionStatus.PURCHASING,
        )


class Extension(_Frozen):
    """An extension asked for on a request (CapacityRecord.extension; the latest one)."""

    number: int  # 1 for the first extension of the request, 2 for the next, ...
    offer: ExtensionOffer
    requested_by: str
    requested_at: datetime
    status: ExtensionStatus = ExtensionStatus.PENDING_APPROVAL
    approved_by: str | None = None
    decided_at: datetime | None = None
    reason: str = ""  # why it was rejected or failed
    card_channel: str | None = None  # where the approvers' card was posted
    card_ts: str | None = None

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
    """The money rule, for extensions: an allowed approver who is not the person asking."""
    if extension.status is not ExtensionStatus.PENDING_APPROVAL:
        return f"this extension is already {extension.status.value.replace('_', ' ')}"
    if not is_approver:
        return "only approvers can approve or reject an extension"
    if user in (extension.requested_by, requester):
        return "you cannot approve or reject an extension of your own reservation"
    return None
