"""How an extension moves a request: asked, its card remembered, decided, and bought at
most once (claimed with a lease, bought, unknown, or failed). Each step takes the record
as it is and returns the new record and the event (bot/domain/transitions.py's shape), or
None when it no longer applies: a newer extension replaced this one, or another worker or
approver moved it meanwhile.

The rules these steps keep (the spending policy, who may decide, when AWS allows an
extension) are in bot/domain/extension.py; the services call AWS and Slack and write the
step (bot/services/extensions.py, extension_buying.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.domain import events as on
from bot.domain.budgets import BudgetCheck, OverBudget, over_budget_refusal
from bot.domain.buy_once import lease
from bot.domain.decisions import Outcome
from bot.domain.extension import (
    Extension,
    ExtensionOffer,
    ExtensionStatus,
    approver_refusal,
    decide,
)
from bot.domain.records import CapacityRecord, Reservation
from bot.domain.transitions import Transition, moved

# What an unknown outcome tells the people who read it.
UNKNOWN_SAID = (
    "the purchase may or may not have happened, and AWS does not show the new end "
    "yet; the bot looks again for two hours and never buys it again"
)


def _this(record: CapacityRecord, number: int, *statuses: ExtensionStatus) -> Extension | None:
    """The request's extension `number` when it is in one of `statuses` (any when none)."""
    ext = record.extension
    if ext is None or ext.number != number or (statuses and ext.status not in statuses):
        return None
    return ext


def _with(record: CapacityRecord, event: on.Event, ext: Extension, **update: object) -> Transition:
    return moved(record, event, extension=ext, **update)


def asked(
    record: CapacityRecord,
    offer: ExtensionOffer,
    user: str,
    now: datetime,
    approvals_needed: int,
    paid_before_usd: float,
    budget: BudgetCheck | None,
) -> Transition | None:
    """A new extension, waiting for approvers; None while another one is open."""
    if record.extension is not None and record.extension.status.open:
        return None
    number = (record.extension.number + 1) if record.extension else 1
    ext = Extension(
        number=number,
        offer=offer,
        requested_by=user,
        requested_at=now,
        required_approvals=approvals_needed,
        paid_before_usd=paid_before_usd,
        budget=budget,
    )
    return _with(record, on.ExtensionAsked(number), ext)


def card_posted(record: CapacityRecord, number: int, channel: str, ts: str) -> Transition | None:
    """Where the approvers' card is, so that it can be updated once decided."""
    ext = _this(record, number)
    if ext is None:
        return None
    where = ext.model_copy(update={"card_channel": channel, "card_ts": ts})
    return _with(record, on.ExtensionCardPosted(number), where)


def decision_refusal(
    record: CapacityRecord, number: int, user: str, is_approver: bool
) -> str | None:
    """Why `user` may not decide extension `number` now, as a sentence; None: they may."""
    ext = record.extension
    if ext is None or ext.number != number:
        return f"That extension of {record.id} was replaced by a newer one."
    why = approver_refusal(ext, user, is_approver, record.requester)
    return why[0].upper() + why[1:] + "." if why is not None else None


@dataclass(frozen=True)
class Decided:
    """An Approve or Reject of an extension: why it was refused, or its outcome and the
    step to write (None when the outcome changes nothing)."""

    refusal: str | None = None
    outcome: Outcome | None = None
    step: Transition | None = None
    budget_guard: int | None = None  # see bot.domain.budgets.judge_approval


def decided(
    record: CapacityRecord,
    number: int,
    user: str,
    is_approver: bool,
    approve: bool,
    reason: str,
    now: datetime,
    budget: BudgetCheck | None = None,
    over_budget: OverBudget = OverBudget.SECOND_APPROVAL,
) -> Decided:
    """The last approval needed approves it (and so schedules its purchase), an earlier
    one is recorded; a rejection ends it. `budget`: see bot.domain.extension.decide."""
    why = decision_refusal(record, number, user, is_approver)
    if why is not None:
        return Decided(refusal=why)
    ext = record.extension
    assert ext is not None  # decision_refusal checked it
    decision = decide(
        ext, user, is_approver, record.requester, approve, reason, now, budget, over_budget
    )
    if decision.outcome is Outcome.OVER_BUDGET and budget is not None:
        return Decided(refusal=f"Not approved: {over_budget_refusal(budget, 'extension')}.")
    if not decision.outcome.changed:
        return Decided(outcome=decision.outcome)
    event: on.Event
    if decision.outcome is Outcome.PARTIAL:
        event = on.ExtensionApprovalRecorded(number)
    elif approve:
        event = on.ExtensionApproved(number)
    else:
        event = on.ExtensionRejected(number)
    step = _with(record, event, decision.extension)
    return Decided(outcome=decision.outcome, step=step, budget_guard=decision.budget_guard)


def purchase_started(record: CapacityRecord, number: int, now: datetime) -> Transition | None:
    """approved -> purchasing, with the attempt's time and lease: exactly one worker wins."""
    ext = _this(record, number, ExtensionStatus.APPROVED)
    if ext is None:
        return None
    claimed = ext.model_copy(
        update={"status": ExtensionStatus.PURCHASING, "attempt_at": now, "lease_until": lease(now)}
    )
    return _with(record, on.ExtensionPurchaseStarted(number), claimed)


def bought(record: CapacityRecord, number: int, reservation: Reservation) -> Transition | None:
    """Bought (or found in AWS after an unknown outcome): the reservation with its new end,
    and the fee added to what the request has paid for extensions."""
    ext = _this(
        record,
        number,
        ExtensionStatus.PURCHASING,
        ExtensionStatus.UNKNOWN,
        ExtensionStatus.PAYMENT_PENDING,
    )
    if ext is None:
        return None
    done = ext.model_copy(update={"status": ExtensionStatus.BOUGHT, "reason": ""})
    extended = round(record.extended_usd + ext.offer.fee_usd, 2)
    return _with(
        record,
        on.ExtensionBought(number),
        done,
        reservation=reservation,
        extended_usd=extended,
    )


def payment_pending(record: CapacityRecord, number: int) -> Transition | None:
    """AWS took the order and is processing the payment: the reservation keeps its end
    (and its reminders) until AWS says paid; the fee stays held, not paid."""
    ext = _this(record, number, ExtensionStatus.PURCHASING, ExtensionStatus.UNKNOWN)
    if ext is None:
        return None
    pending = ext.model_copy(update={"status": ExtensionStatus.PAYMENT_PENDING, "reason": ""})
    return _with(record, on.ExtensionPaymentPending(number), pending)


PAYMENT_FAILED = (
    "AWS could not take the payment, so the reservation keeps its old end and nothing "
    "was paid for the extension"
)


def payment_failed(record: CapacityRecord, number: int) -> Transition | None:
    """AWS says the payment failed (while pending, or found so after an unknown outcome):
    nothing bought, the old end stands, and a new extension may be asked."""
    ext = _this(
        record,
        number,
        ExtensionStatus.PAYMENT_PENDING,
        ExtensionStatus.PURCHASING,
        ExtensionStatus.UNKNOWN,
    )
    if ext is None:
        return None
    failed = ext.model_copy(update={"status": ExtensionStatus.FAILED, "reason": PAYMENT_FAILED})
    return _with(record, on.ExtensionFailed(number), failed)


def outcome_unknown(record: CapacityRecord, number: int) -> Transition | None:
    """The purchase call got no certain answer and AWS does not show the new end: never
    bought again, looked for again, and an approver can mark it failed."""
    ext = _this(record, number, ExtensionStatus.PURCHASING)
    if ext is None:
        return None
    unknown = ext.model_copy(update={"status": ExtensionStatus.UNKNOWN, "reason": UNKNOWN_SAID})
    return _with(record, on.ExtensionUnknown(number), unknown)


MARKED_FAILED = "marked failed by an approver: nothing was bought"


def marked_failed(record: CapacityRecord, number: int) -> Transition | None:
    """An unknown outcome ended by an approver's word that nothing was bought (who may
    say so is the service's to check): never bought again, and a new extension may be
    asked."""
    ext = _this(record, number, ExtensionStatus.UNKNOWN)
    if ext is None:
        return None
    failed = ext.model_copy(update={"status": ExtensionStatus.FAILED, "reason": MARKED_FAILED})
    return _with(record, on.ExtensionFailed(number), failed)


def purchase_failed(record: CapacityRecord, number: int, reason: str) -> Transition | None:
    """Nothing was bought (the answer was certain, or nothing was sent)."""
    ext = _this(record, number, ExtensionStatus.PURCHASING)
    if ext is None:
        return None
    failed = ext.model_copy(update={"status": ExtensionStatus.FAILED, "reason": reason})
    return _with(record, on.ExtensionFailed(number), failed)
