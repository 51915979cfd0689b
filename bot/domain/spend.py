"""The spend report: per request what its team committed in a month, how much of it was
used, what On-Demand would have cost for the hours used; per team the totals; MIG
deployments with each model's share. Pure: the records and deployments are handed in.

What counts, and in which month: see bot.domain.budgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.domain.budgets import month_of
from bot.domain.comparison import OptionKind
from bot.domain.deployment.record import Deployment
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord

# The states in which a request's money is committed: approved, being bought, bought.
COMMITTED = frozenset(
    {
        State.APPROVED,
        State.PURCHASING,
        State.PAYMENT_PENDING,
        State.SCHEDULED,
        State.ACTIVE,
        State.EXPIRING,
        State.EXPIRED,
        State.CLEANED_UP,
        State.PURCHASE_UNKNOWN,
    }
)


def committed_usd(record: CapacityRecord) -> float:
    """What the request commits: the fees paid (purchase and extensions) once bought, else
    the chosen option's expected total; 0 when nothing is committed."""
    if record.state not in COMMITTED:
        return 0.0
    return record.paid_usd or 0.0


def month_of_record(record: CapacityRecord) -> str:
    """The month a request counts in: the month (UTC) its window starts."""
    return month_of(record.window[0])


def team_month_usd(records: Iterable[CapacityRecord], team: str, month: str) -> float:
    return sum(
        committed_usd(r) for r in records if r.team_name == team and month_of_record(r) == month
    )


@dataclass(frozen=True)
class SpendRow:
    request_id: str
    team: str
    requester: str
    option: str
    committed_usd: float
    used_pct: float | None  # None: not measured
    on_demand_usd: float | None  # the hours used at the On-Demand rate (None: not known)


@dataclass(frozen=True)
class ModelCost:
    deployment_id: str
    request_id: str
    team: str
    model: str
    share: float
    usd: float  # the model's share of what its request committed
    usd_per_hour: float | None


@dataclass(frozen=True)
class TeamTotal:
    team: str
    committed_usd: float
    on_demand_usd: float  # of the measured requests only
    budget_usd: float | None


@dataclass(frozen=True)
class SpendReport:
    month: str
    team: str | None
    rows: list[SpendRow]
    teams: list[TeamTotal]
    models: list[ModelCost] = field(default_factory=list)

    @property
    def total_usd(self) -> float:
        return round(sum(t.committed_usd for t in self.teams), 2)


def _on_demand_rate(record: CapacityRecord) -> float | None:
    if record.quote is None:
        return None
    rate = record.quote.option(OptionKind.ON_DEMAND).hourly_usd
    return rate if rate is not None and rate > 0 else None


def spend_row(record: CapacityRecord) -> SpendRow:
    usage = record.usage
    pct = usage.utilisation_pct if usage is not None else None
    rate = _on_demand_rate(record)
    on_demand = None
    if usage is not None and pct is not None and rate is not None:
        on_demand = round(usage.used_instance_hours * rate, 2)
    return SpendRow(
        request_id=record.id,
        team=record.team_name,
        requester=record.requester,
        option=record.choice.kind.label if record.choice else "none",
        committed_usd=round(committed_usd(record), 2),
        used_pct=None if pct is None else round(pct, 1),
        on_demand_usd=on_demand,
    )


def spend_report(
    records: Iterable[CapacityRecord],
    month: str,
    team: str | None = None,
    budgets: Mapping[str, float] | None = None,
    deployments: Mapping[str, list[Deployment]] | None = None,
) -> SpendReport:
    """The month's report (`team`: only that team's requests)."""
    chosen = [
        r
        for r in records
        if r.state in COMMITTED
        and month_of_record(r) == month
        and (team is None or r.team_name == team)
    ]
    chosen.sort(key=lambda r: (r.team_name, r.window[0], r.id))
    rows = [spend_row(r) for r in chosen]
    budgets = budgets or {}
    totals: dict[str, list[float]] = {}
    for row in rows:
        got = totals.setdefault(row.team, [0.0, 0.0])
        got[0] += row.committed_usd
        got[1] += row.on_demand_usd or 0.0
    teams = [
        TeamTotal(name, round(c, 2), round(od, 2), budgets.get(name))
        for name, (c, od) in sorted(totals.items())
    ]
    models = [
        ModelCost(
            d.id,
            r.id,
            r.team_name,
            c.model,
            c.share,
            round(c.share * committed_usd(r), 2),
            c.reserved_usd_per_hour,
        )
        for r in chosen
        for d in (deployments or {}).get(r.id, [])
        for c in d.costs
    ]
    return SpendReport(month, team, rows, teams, models)
