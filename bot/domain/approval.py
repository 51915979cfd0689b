"""Who may approve what, and what an Approve or Reject click does to a request.

Money rule: nothing moves past pending_approval without enough approvals from allowed
approvers who are not the requester. These functions are pure; the store applies their
result as a compare-and-set, so a click decided on a stale read is retried or refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from bot.domain.budgets import BudgetCheck, OverBudget, judge_approval, over_budget_refusal
from bot.domain.decisions import Approval, Outcome, Rejection
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request import MAX_REASON_CHARS, clean_text


@dataclass(frozen=True)
class Spend:
    """How the spending policy judged one purchase."""

    approvals: int  # how many different approvers it needs
    refusal: str | None  # why it may not be bought at all (above the cap); None: it may


@dataclass(frozen=True)
class SpendingPolicy:
    """The one spending policy for every purchase: a request and each extension of it.

    Limits apply to the most a purchase can cost (pay-as-you-go, Spot included, at the
    On-Demand rate for 100% of its window; a reservation's fee), never to the requester's
    own utilisation estimate, which nothing holds them to. An extension is judged on its
    own fee and on what the request costs in all once it is bought.
    """

    second_approval_usd: float | None = None
    max_request_usd: float | None = None

    def __post_init__(self) -> None:
        for value in (self.second_approval_usd, self.max_request_usd):
            # NaN compares false with everything and would switch a rule off.
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"a spending limit must be a finite amount above zero: {value}")

    def judge(self, most_usd: float, paid_before_usd: float = 0.0) -> Spend:
        """A purchase that can cost up to `most_usd`, on a request that has cost
        `paid_before_usd` so far (0 for the request's own purchase)."""
        total = most_usd + paid_before_usd
        amounts = (most_usd, total)
        unbounded = not all(math.isfinite(a) for a in amounts)
        second = self.second_approval_usd
        approvals = 2 if unbounded or (second is not None and max(amounts) > second) else 1
        cap = self.max_request_usd
        if cap is None or not (unbounded or max(amounts) > cap):
            return Spend(approvals, None)
        if paid_before_usd > 0:
            refusal = (
                f"this extension costs ${most_usd:,.2f} and takes the request to "
                f"${total:,.2f} in all, above the ${cap:,.2f} limit for one request: ask for "
                "a shorter extension, or a new request"
            )
        else:
            refusal = (
                f"this request can cost up to ${most_usd:,.2f} (running the whole window), "
                f"above the ${cap:,.2f} limit for one request: ask for fewer instances or a "
                "shorter window, or split it"
            )
        return Spend(approvals, refusal)

    def approvals_needed(self, most_usd: float) -> int:
        return self.judge(most_usd).approvals

    def refusal(self, most_usd: float) -> str | None:
        """Why a request that can cost up to `most_usd` may not even be posted, or None."""
        return self.judge(most_usd).refusal


def judge_budget(
    spend: Spend, check: BudgetCheck | None, rule: OverBudget, what: str = "request"
) -> Spend:
    """The spending policy's verdict with the team's monthly budget added: a purchase that
    takes the team over it needs a second approver, or is refused, by `rule`."""
    if check is None or not check.over:
        return spend
    approvals = max(spend.approvals, 2)
    if rule is OverBudget.REFUSE and spend.refusal is None:
        return Spend(approvals, over_budget_refusal(check, what))
    return Spend(approvals, spend.refusal)


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    record: CapacityRecord  # the new record when changed, else the one given
    # A decisive approval judged within the team's budget: the team-month's held and paid
    # may reach this (cents) with it, checked again in the write (None: nothing to check).
    budget_guard: int | None = None
    budget: BudgetCheck | None = None  # the team's month as this decision judged it


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


def approve_refusal(
    record: CapacityRecord, user: str, is_approver: bool, now: datetime
) -> Outcome | None:
    """Why `user` may not approve now: asked before the money is put to them, and again
    when they confirm."""
    refused = refusal(record, user, is_approver, now)
    if refused is None and user in record.approvers:
        return Outcome.ALREADY_APPROVED_BY_YOU
    return refused


def approve(
    record: CapacityRecord,
    user: str,
    is_approver: bool,
    now: datetime,
    budget: BudgetCheck | None = None,
    over_budget: OverBudget = OverBudget.SECOND_APPROVAL,
) -> Decision:
    """An Approve. `budget`: where this request takes its team's month now (None: no
    budget). It is judged when the approval would be the decisive one: over the budget, a
    second approver is needed (or, under `refuse`, the approval is refused); within it,
    the decision carries a guard the write checks again, so that two approvals that
    together go over cannot both pass on the same totals."""
    refused = approve_refusal(record, user, is_approver, now)
    if refused is not None:
        return Decision(refused, record)
    approvals = (*record.approvals, Approval(user=user, at=now))
    verdict = judge_approval(len(approvals), record.required_approvals, budget, over_budget)
    if verdict.refused:
        return Decision(Outcome.OVER_BUDGET, record, budget=budget)
    done = len(approvals) >= verdict.needed
    updated = record.model_copy(
        update={
            "approvals": approvals,
            "required_approvals": verdict.needed,
            "budget": budget if budget is not None else record.budget,
            "state": State.APPROVED if done else State.PENDING_APPROVAL,
            "updated_at": now,
        }
    )
    outcome = Outcome.APPROVED if done else Outcome.PARTIAL
    return Decision(outcome, updated, budget_guard=verdict.guard, budget=budget)


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
