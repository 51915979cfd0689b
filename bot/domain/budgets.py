"""Monthly budgets per team: what a team has committed in a month, and the rule for a
purchase that takes it over its budget.

A request counts in the month its window starts (UTC): the reservation's start once
bought, else the offering's or the window asked for; its extensions count in the same
month. What it commits is what was paid (the purchase and every extension) once bought,
else the chosen option's expected total.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
MONTH_ACCEPTED = "a month as YYYY-MM, e.g. 2026-12"


class OverBudget(StrEnum):
    """GPU_BOT_OVER_BUDGET: what a purchase that takes its team over budget needs."""

    SECOND_APPROVAL = "second-approval"
    REFUSE = "refuse"


def month_of(at: datetime) -> str:
    return f"{at.year:04d}-{at.month:02d}"


def parse_month(text: str) -> str:
    """`2026-12` as is; ValueError naming what is accepted otherwise."""
    m = _MONTH.fullmatch(text.strip())
    if not m or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 2000:
        raise ValueError(f'"{text.strip()}" is not a month: {MONTH_ACCEPTED}')
    return text.strip()


class BudgetCheck(BaseModel):
    """Where a purchase takes its team's month, as the approvers were shown it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: str
    month: str  # YYYY-MM
    budget_usd: float
    before_usd: float  # committed in the month before this purchase
    this_usd: float  # the most this purchase can cost

    @property
    def after_usd(self) -> float:
        return round(self.before_usd + self.this_usd, 2)

    @property
    def over(self) -> bool:
        return self.after_usd > self.budget_usd

    def line(self, what: str = "request") -> str:
        return (
            f"{self.team}: ${self.before_usd:,.0f} of ${self.budget_usd:,.0f} in {self.month}; "
            f"this {what} takes it to ${self.after_usd:,.0f}"
        )
