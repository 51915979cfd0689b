"""Teams, their months and budgets, and what they measured: the lookups behind the learned
default `util`, the budget line on approval cards and the spend report. The rules are
pure (bot.domain.teams, .learning, .budgets, .spend); this reads the records they judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta

from bot.domain.budgets import BudgetCheck, OverBudget
from bot.domain.deployment.record import Deployment
from bot.domain.learning import LearnedUtil, learned_util
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest
from bot.domain.spend import (
    COMMITTED,
    SpendReport,
    month_of_record,
    spend_report,
    team_month_usd,
)
from bot.domain.teams import Team, team_of
from bot.services.approvers import group_members
from bot.services.ports import GroupDirectory, Store

# Where measured reservations are found: bought, and run (or running).
MEASURED = (State.ACTIVE, State.EXPIRING, State.EXPIRED, State.CLEANED_UP)
LEARNED_TTL = timedelta(minutes=5)


class SpendLedger:
    def __init__(
        self,
        store: Store,
        teams: Sequence[Team] = (),
        budgets: Mapping[str, float] | None = None,
        over_budget: OverBudget = OverBudget.SECOND_APPROVAL,
        groups: GroupDirectory | None = None,
    ) -> None:
        self.store = store
        self.teams = tuple(teams)
        self.budgets = dict(budgets or {})
        self.over_budget = over_budget
        self._groups = groups

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
        """The team's measured utilisation, read from every measured record (kept for
        `LEARNED_TTL`: a quote need not read them all again, and a few minutes' newer
        samples move a weighted figure little)."""
        key = f"learned:{team}"
        cached = self.store.cache_get(key)
        if cached is not None:
            return LearnedUtil.model_validate_json(cached) if cached else None
        records = [r for state in MEASURED for r in self.store.in_state(state)]
        learned = learned_util(records, team)
        self.store.cache_put(key, learned.model_dump_json() if learned else "", LEARNED_TTL)
        return learned

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

    def _committed(self) -> list[CapacityRecord]:
        return [r for state in COMMITTED for r in self.store.in_state(state)]

    def check(
        self, record: CapacityRecord, this_usd: float, *, extension: bool = False
    ) -> BudgetCheck | None:
        """Where a purchase of up to `this_usd` on `record` takes its team's month (None:
        the team has no budget). A request's own amount is left out of its month so far
        (it is not committed yet); for an `extension`, what its request paid is in it."""
        team = record.team_name
        budget = self.budgets.get(team)
        if budget is None:
            return None
        month = month_of_record(record)
        others = [r for r in self._committed() if extension or r.id != record.id]
        before = team_month_usd(others, team, month)
        return BudgetCheck(
            team=team,
            month=month,
            budget_usd=budget,
            before_usd=round(before, 2),
            this_usd=round(this_usd, 2),
        )

    # --- the report -------------------------------------------------------------------

    def report(
        self,
        month: str,
        team: str | None = None,
        deployments_of: Callable[[str], list[Deployment]] | None = None,
    ) -> SpendReport:
        records = self._committed()
        first = spend_report(records, month, team, self.budgets)
        if deployments_of is None:
            return first
        deployments = {row.request_id: deployments_of(row.request_id) for row in first.rows}
        return spend_report(records, month, team, self.budgets, deployments)
