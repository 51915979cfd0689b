"""Teams, their months and budgets, and what they measured: the lookups behind the learned
default `util`, the budget judged at each decisive approval and the spend report. The
rules are pure (bot.domain.teams, .learning, .budgets, .ledger, .spend); this reads what
the ledger keeps beside the records (the store's `MoneyIndex`), never every record."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from bot.domain.budgets import BudgetCheck, OverBudget, TeamMonth, month_of
from bot.domain.deployment.record import Deployment
from bot.domain.learning import LearnedUtil, learned_util
from bot.domain.ledger import asked_cents, month_of_record
from bot.domain.money import dollars
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest
from bot.domain.spend import SpendReport, model_costs, team_total
from bot.domain.teams import Team, team_of
from bot.services.approvers import group_members
from bot.services.ports import GroupDirectory, Store

REPORT_ROWS = 40  # the request lines a Slack answer shows; the CLI reads them all


class UnknownTeam(ValueError):
    """A team nobody configured, and that nothing was ever counted for."""


class SpendLedger:
    def __init__(
        self,
        store: Store,
        teams: Sequence[Team] = (),
        budgets: Mapping[str, float] | None = None,
        over_budget: OverBudget = OverBudget.SECOND_APPROVAL,
        groups: GroupDirectory | None = None,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.teams = tuple(teams)
        self.budgets = dict(budgets or {})
        self.over_budget = over_budget
        self._groups = groups
        self.now = now

    def team_of(self, user: str, channel: str | None = None) -> str:
        """The team of a request by `user` (in `channel`): GPU_BOT_TEAMS, else the user."""
        if not self.teams:
            return user
        return team_of(user, channel, self.teams, self._members)

    def _members(self, group: str) -> frozenset[str]:
        if self._groups is None:
            return frozenset()
        # Strict: a request counted as the requester's own, for want of its team's
        # members, would escape the team's budget. The job that asked is retried.
        return group_members(group, self._groups, self.store, strict=True)

    # --- learning ---------------------------------------------------------------------

    def learned(self, team: str) -> LearnedUtil | None:
        """The team's measured utilisation, from its last closed reservations (kept as
        each one closes, so a report card's figures count from the next quote on)."""
        return learned_util(self.store.closed_of(team), team)

    def with_learned_util(
        self, request: CapacityRequest, team: str
    ) -> tuple[CapacityRequest, LearnedUtil | None]:
        """The request to quote: at the team's measured utilisation when it said no
        `util=`, and what was learned (None: the request as it is)."""
        if request.utilization_given:
            return request, None
        learned = self.learned(team)
        if learned is None:
            return request, None
        return request.model_copy(update={"utilization_pct": learned.pct}), learned

    # --- budgets ----------------------------------------------------------------------

    def check(self, record: CapacityRecord, this_usd: float) -> BudgetCheck | None:
        """Where a purchase of up to `this_usd` on `record` takes its team's month, from
        the month's held and paid as kept now (None: the team has no budget). What else
        waits for approvers in the month is said beside it (this one left out)."""
        team = record.team_name
        budget = self.budgets.get(team)
        if budget is None:
            return None
        month = month_of_record(record)
        totals = self.store.team_month(team, month)
        own = asked_cents(record)
        return BudgetCheck(
            team=team,
            month=month,
            budget_usd=budget,
            before_usd=dollars(totals.committed),
            this_usd=round(this_usd, 2),
            pending_usd=dollars(max(totals.asked - own, 0)),
            pending_n=max(totals.asked_n - (1 if own else 0), 0),
        )

    def quote_check(self, team: str, start: datetime, this_usd: float) -> BudgetCheck | None:
        """Where a request not yet submitted would take its team's month (None: the team
        has no budget): the month's held and paid as kept now, and what waits for
        approvers."""
        budget = self.budgets.get(team)
        if budget is None:
            return None
        month = month_of(start)
        totals = self.store.team_month(team, month)
        return BudgetCheck(
            team=team,
            month=month,
            budget_usd=budget,
            before_usd=dollars(totals.committed),
            this_usd=round(this_usd, 2),
            pending_usd=dollars(totals.asked),
            pending_n=totals.asked_n,
        )

    # --- the report -------------------------------------------------------------------

    def known_team(self, team: str) -> bool:
        """A team configured (by GPU_BOT_TEAMS or a budget), or one with spend kept."""
        return team in self.budgets or any(t.name == team for t in self.teams)

    def _unknown(self, team: str, month: str, totals: Mapping[str, object]) -> str:
        known = sorted(set(totals) | set(self.budgets) | {t.name for t in self.teams})
        if not known:
            return f'There is no team "{team}": nothing was approved in {month}.'
        listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        return f'There is no team "{team}" in {month}: the teams are {listed}.'

    def report(
        self,
        month: str,
        team: str | None = None,
        deployments_of: Callable[[str], list[Deployment]] | None = None,
        rows: int | None = REPORT_ROWS,
        *,
        own_team: bool = False,
    ) -> SpendReport:
        """The month's report from the kept totals and rows: every team (or `team`) with
        its totals against its budget, and the first `rows` request rows (all: None).
        Teams with a budget and nothing in the month are listed at $0; a team that is
        neither configured nor counted in the month raises UnknownTeam, naming those
        that are (`own_team`: the asker's own, known whatever it holds)."""
        totals = self.store.month_totals(month)
        if team is not None and not own_team and team not in totals and not self.known_team(team):
            raise UnknownTeam(self._unknown(team, month, totals))
        names = sorted(set(totals) | set(self.budgets)) if team is None else [team]
        counts, shown = self.store.month_rows(month, names, rows)
        teams = [
            team_total(name, totals.get(name) or TeamMonth(), self.budgets.get(name), counts[name])
            for name in names
        ]
        models = []
        if deployments_of is not None:
            deployments = {r.request_id: deployments_of(r.request_id) for r in shown}
            models = model_costs(shown, deployments, self.now())
        return SpendReport(month, team, shown, teams, models)
