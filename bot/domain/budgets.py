"""Monthly budgets per team: what a team has committed in a month, and the rule for a
purchase that takes it over its budget.

A request counts in the month its window starts (UTC): the reservation's start once
bought, else the offering's or the window asked for; its extensions count in the same
month. What it commits is its ledger's held and paid (bot/domain/money.py): the most it
can cost from the decisive approval until it is bought, then what AWS charged. A budget is
judged at the decisive approval of a request or an extension, in the same compare-and-set
as the approval, against the team-month's totals kept with every change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
MONTH_ACCEPTED = "a month as YYYY-MM, e.g. 2026-12"


class OverBudget(StrEnum):
    """GPU_BOT_OVER_BUDGET: what a purchase that takes its team over budget needs."""

    SECOND_APPROVAL = "second-approval"
    REFUSE = "refuse"


@dataclass(frozen=True)
class AtApproval:
    """How the team's budget judges an approval: refused (`refuse`, over it), how many
    approvers the purchase needs now, and the guard a decisive approval within the budget
    carries into its write (cents the team-month's held and paid may reach)."""

    refused: bool
    needed: int
    guard: int | None


def judge_approval(
    approvals: int, needed: int, check: BudgetCheck | None, rule: OverBudget
) -> AtApproval:
    """`approvals`: how many there would be with this one; `needed`: how many the
    spending policy asked for. Only the decisive approval is judged: over the budget it
    needs a second approver, or is refused under `refuse`."""
    over = check is not None and check.over
    if over and approvals >= needed:
        if rule is OverBudget.REFUSE:
            return AtApproval(True, needed, None)
        needed = max(needed, 2)
    guard = None
    if check is not None and not over and approvals >= needed:
        guard = round(check.budget_usd * 100)
    return AtApproval(False, needed, guard)


def over_budget_refusal(check: BudgetCheck, what: str = "request") -> str:
    """Why `refuse` refuses a purchase that takes its team over its budget, with by how
    much (a clause: the caller starts the sentence)."""
    return (
        f"it takes {check.team} to ${check.after_usd:,.2f} in {check.month}, "
        f"${check.over_by_usd:,.2f} over its ${check.budget_usd:,.2f} budget "
        f"(${check.before_usd:,.2f} held or paid so far): ask for a smaller {what}, or for "
        "the budget to be raised"
    )


def month_of(at: datetime) -> str:
    return f"{at.year:04d}-{at.month:02d}"


def parse_month(text: str) -> str:
    """`2026-12` as is; ValueError naming what is accepted otherwise."""
    m = _MONTH.fullmatch(text.strip())
    if not m or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 2000:
        raise ValueError(f'"{text.strip()}" is not a month: {MONTH_ACCEPTED}')
    return text.strip()


@dataclass(frozen=True)
class TeamMonth:
    """A team's month as the ledger keeps it (cents): held and paid (what a budget
    counts), what waits for approvers (and how many), and what was measured."""

    held: int = 0
    paid: int = 0
    asked: int = 0
    asked_n: int = 0
    measured: int = 0

    @property
    def committed(self) -> int:
        return self.held + self.paid


class BudgetCheck(BaseModel):
    """Where a purchase takes its team's month, as the approvers were shown it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: str
    month: str  # YYYY-MM
    budget_usd: float
    before_usd: float  # held and paid in the month before this purchase
    this_usd: float  # the most this purchase can cost
    pending_usd: float = 0.0  # what else waits for approvers in the team's month
    pending_n: int = 0  # how many requests and extensions that is

    @property
    def after_usd(self) -> float:
        return round(self.before_usd + self.this_usd, 2)

    @property
    def over(self) -> bool:
        return self.after_usd > self.budget_usd

    @property
    def over_by_usd(self) -> float:
        return round(self.after_usd - self.budget_usd, 2)

    def line(self, what: str = "request") -> str:
        line = (
            f"{self.team}: ${self.before_usd:,.0f} of ${self.budget_usd:,.0f} held or paid in "
            f"{self.month}; this {what} takes it to ${self.after_usd:,.0f}"
        )
        if self.pending_n:
            others = "other request" if self.pending_n == 1 else "other requests"
            line += f" ({self.pending_n} {others} for ${self.pending_usd:,.0f} wait for approvers)"
        return line
