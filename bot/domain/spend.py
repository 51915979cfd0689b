"""The spend report: per request its team's held and paid money in a month, how much of it
was used, what On-Demand would have cost for the hours used; per team the totals against
the budget; MIG deployments with each model's cost for the time its endpoint existed.
Pure: the ledger's kept rows and totals are handed in (bot/domain/ledger.py, SpendRow),
never worked out again from the records.

What counts, and in which month: see bot.domain.budgets and bot.domain.money.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.domain.budgets import TeamMonth
from bot.domain.deployment.record import Deployment, DeployState
from bot.domain.ledger import SpendRow
from bot.domain.money import cents, dollars


@dataclass(frozen=True)
class ModelCost:
    deployment_id: str
    request_id: str
    team: str
    model: str
    share: float
    hours: float  # how long its endpoint held the plan's accelerators
    usd: float  # its share of the plan's rate over those hours
    usd_per_hour: float | None


@dataclass(frozen=True)
class TeamTotal:
    team: str
    held_usd: float
    paid_usd: float
    asked_usd: float  # waiting for approvers (not counted against the budget yet)
    measured_usd: float  # the hours used at the On-Demand rate, of measured requests
    budget_usd: float | None
    requests: int  # rows of the team in the month

    @property
    def committed_usd(self) -> float:
        return round(self.held_usd + self.paid_usd, 2)

    @property
    def left_usd(self) -> float | None:
        return None if self.budget_usd is None else round(self.budget_usd - self.committed_usd, 2)


@dataclass(frozen=True)
class SpendReport:
    month: str
    team: str | None
    rows: list[SpendRow]  # in order: team, start (possibly only the first page)
    teams: list[TeamTotal]
    models: list[ModelCost] = field(default_factory=list)

    @property
    def total_usd(self) -> float:
        return dollars(sum(cents(t.committed_usd) for t in self.teams))

    @property
    def row_count(self) -> int:
        return sum(t.requests for t in self.teams)

    @property
    def more_rows(self) -> int:
        return self.row_count - len(self.rows)


def team_total(team: str, month: TeamMonth, budget: float | None, requests: int) -> TeamTotal:
    return TeamTotal(
        team=team,
        held_usd=dollars(month.held),
        paid_usd=dollars(month.paid),
        asked_usd=dollars(month.asked),
        measured_usd=dollars(month.measured),
        budget_usd=budget,
        requests=requests,
    )


def deployment_hours(deployment: Deployment, now: datetime) -> float:
    """How long a deployment held its plan's accelerators: from when it was made until it
    was cleaned up (or now, or the plan's end); a refused one, never."""
    if deployment.state is DeployState.REFUSED:
        return 0.0
    end = deployment.updated_at if deployment.state is DeployState.DELETED else now
    if deployment.plan_end is not None:
        end = min(end, deployment.plan_end)
    return max((end - deployment.created_at).total_seconds(), 0.0) / 3600.0


def model_costs(
    rows: Sequence[SpendRow], deployments: Mapping[str, Sequence[Deployment]], now: datetime
) -> list[ModelCost]:
    """Each model's share of its plan's rate for the time its endpoint existed."""
    costs = []
    for row in rows:
        for d in deployments.get(row.request_id, ()):
            hours = deployment_hours(d, now)
            for c in d.costs:
                rate = c.reserved_usd_per_hour
                usd = round(rate * hours, 2) if rate is not None else 0.0
                costs.append(
                    ModelCost(d.id, row.request_id, row.team, c.model, c.share, hours, usd, rate)
                )
    return costs
