"""Teams, budgets and the learned default as pure rules, and their settings' start-up
errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config import ConfigError, load_settings
from bot.domain.approval import Spend, judge_budget
from bot.domain.budgets import BudgetCheck, OverBudget, parse_month
from bot.domain.comparison import OptionKind
from bot.domain.learning import learned_util
from bot.domain.ledger import Closed
from bot.domain.lifecycle import State
from bot.domain.teams import Team, parse_teams, team_of
from bot.domain.utilisation import Usage
from tests.factories import make_record


def _measured(n: int, used: float, billed: float) -> Closed:
    return Closed(datetime(2026, 11, n, tzinfo=UTC), used, billed)


def test_the_learned_util_weighs_by_billed_hours_over_the_last_five() -> None:
    closed = [
        _measured(n + 1, u, b)
        for n, (u, b) in enumerate([(100, 100), (10, 100), (90, 100), (60, 200), (0, 50), (40, 50)])
    ]
    got = learned_util(closed[::-1], "U0REQUESTER")  # in any order: by start
    # 200 used of 500 billed in the five newest.
    assert got is not None and (got.pct, got.reservations, got.team) == (40, 5, "U0REQUESTER")
    assert learned_util([], "U0SOMEONE") is None
    assert learned_util([_measured(1, 0, 0)], "U0REQUESTER") is None  # nothing billed yet


def test_the_learned_util_is_never_zero() -> None:
    got = learned_util([_measured(1, 0, 100)], "U0REQUESTER")
    assert got is not None and got.pct == 1


def test_only_a_reservation_measured_to_its_end_is_learned_from() -> None:
    from bot.domain.ledger import closed
    from bot.domain.records import Reservation

    res = Reservation(
        kind=OptionKind.CAPACITY_BLOCK, id="cr-1", region="us-east-1",
        instance_type="p5.48xlarge", instances=2, start=datetime(2026, 12, 1, tzinfo=UTC),
        end=datetime(2026, 12, 2, tzinfo=UTC), state="active",
    )  # fmt: skip
    usage = Usage(used_instance_hours=10, billed_instance_hours=48)
    running = make_record(state=State.ACTIVE, reservation=res, usage=usage)
    assert closed(running) is None
    ended = running.model_copy(update={"state": State.EXPIRED})
    assert closed(ended) == Closed(res.start, 10, 48)


def test_a_team_is_found_by_group_then_channel_else_the_user() -> None:
    teams = parse_teams("ml-research=S0ML,C0ML;infra=S0INFRA")
    assert teams[0] == Team("ml-research", ("S0ML",), ("C0ML",))
    groups = {"S0ML": frozenset({"U1"}), "S0INFRA": frozenset({"U2"})}
    members = groups.__getitem__
    assert team_of("U2", "C0ML", teams, members) == "infra"  # the group wins
    assert team_of("U3", "C0ML", teams, members) == "ml-research"
    assert team_of("U3", "C0OTHER", teams, members) == "U3"


def test_over_budget_takes_a_second_approval_or_a_refusal() -> None:
    over = BudgetCheck(team="t", month="2026-12", budget_usd=100, before_usd=60, this_usd=50)
    within = over.model_copy(update={"this_usd": 40})
    assert judge_budget(Spend(1, None), within, OverBudget.REFUSE) == Spend(1, None)
    assert judge_budget(Spend(1, None), over, OverBudget.SECOND_APPROVAL) == Spend(2, None)
    refused = judge_budget(Spend(1, None), over, OverBudget.REFUSE)
    assert refused.refusal is not None and "$110.00 in 2026-12" in refused.refusal
    assert judge_budget(Spend(1, None), None, OverBudget.REFUSE) == Spend(1, None)


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "26-12", "december"])
def test_a_month_that_is_not_one_says_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match=r"YYYY-MM, e\.g\. 2026-12"):
        parse_month(text)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"GPU_BOT_BUDGETS": "ml-research=lots"}, "'lots' (team ml-research) is not an amount"),
        ({"GPU_BOT_BUDGETS": "U0ONE=-5"}, "must be an amount above zero"),
        ({"GPU_BOT_BUDGETS": "U0ONE"}, "'U0ONE' is not team=USD"),
        ({"GPU_BOT_BUDGETS": "ml=5"}, "without GPU_BOT_TEAMS each requester is their own team"),
        (
            {"GPU_BOT_TEAMS": "ml=S0ML", "GPU_BOT_BUDGETS": "infra=5"},
            "'infra', which is not a team of GPU_BOT_TEAMS (ml)",
        ),
        ({"GPU_BOT_TEAMS": "ml=U0ME"}, "'U0ME' (team ml) is not a user group S… or channel C…"),
        ({"GPU_BOT_TEAMS": "ml=S0A;infra=S0A"}, "S0A is in two teams: ml and infra"),
        ({"GPU_BOT_TEAMS": "ml"}, "'ml' is not team=ID,ID"),
        ({"GPU_BOT_OVER_BUDGET": "warn"}, "'second-approval' or 'refuse'"),
    ],
)
def test_malformed_team_settings_stop_the_start_with_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], said: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None)
    message = str(caught.value)
    assert said in message
    assert message.count("\n") == 1  # one problem, one line


def test_well_formed_team_settings_are_read() -> None:
    settings = load_settings(
        _env_file=None,
        GPU_BOT_TEAMS="ml-research=S0123,C0456;infra=S0789",
        GPU_BOT_BUDGETS="ml-research=50000,infra=20_000",
        GPU_BOT_OVER_BUDGET="refuse",
    )
    assert [t.name for t in settings.teams] == ["ml-research", "infra"]
    assert settings.budgets == {"ml-research": 50000.0, "infra": 20000.0}
    assert settings.over_budget is OverBudget.REFUSE


def _bought(request_id: str, fee: float, team: str, **kw: object):  # type: ignore[no-untyped-def]
    from bot.domain.records import Choice, Reservation
    from tests.unit.test_comparison import quote, req

    start = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)
    res = Reservation(
        kind=OptionKind.CAPACITY_BLOCK, id=f"cr-{request_id}", region="us-east-1",
        instance_type="p5.48xlarge", instances=2, start=start,
        end=start.replace(day=17), fee_usd=fee, state="expired",
    )  # fmt: skip
    return make_record(
        request_id,
        state=State.EXPIRED,
        team=team,
        quote=quote(req()),
        reservation=res,
        choice=Choice(kind=OptionKind.CAPACITY_BLOCK, offering_id="x", total_usd=fee),
        **kw,
    )


def test_a_spend_row_is_the_ledger_with_the_hours_used_at_on_demand() -> None:
    from bot.domain.ledger import project, settle
    from tests.unit.test_comparison import OD

    used = Usage(used_instance_hours=72, billed_instance_hours=144)
    row = project(_bought("R1", 4983.55, "ml", usage=used), 1).row
    assert row is not None
    assert (row.team, row.option, row.paid, row.held) == ("ml", "Capacity Block", 498355, 0)
    assert (row.used_pct, row.measured) == (50.0, round(72 * OD * 100))
    unmeasured = project(_bought("R2", 1000.0, "ml"), 2).row
    assert unmeasured is not None and (unmeasured.used_pct, unmeasured.measured) == (None, 0)
    rejected = make_record("R5", state=State.REJECTED, team="infra")
    assert project(settle(rejected, datetime.now(UTC), "x"), 5).row is None


def test_a_model_costs_its_share_of_the_plan_for_the_time_its_endpoint_existed() -> None:
    from datetime import timedelta

    from bot.domain.deployment.record import CostLine, Deployment, DeployState
    from bot.domain.ledger import project
    from bot.domain.spend import model_costs

    made = datetime(2026, 12, 14, 12, tzinfo=UTC)
    costs = (
        CostLine(model="llama", share=0.75, on_demand_usd_per_hour=None, reserved_usd_per_hour=9),
        CostLine(model="embed", share=0.25, on_demand_usd_per_hour=None, reserved_usd_per_hour=3),
    )
    deployment = Deployment.model_construct(
        id="D1", request_id="R1", costs=costs, state=DeployState.DELETED, created_at=made,
        updated_at=made + timedelta(minutes=31), plan_end=made + timedelta(days=2),
    )  # fmt: skip
    row = project(_bought("R1", 4983.55, "ml"), 1).row
    assert row is not None
    got = model_costs([row], {"R1": [deployment]}, made + timedelta(days=5))
    # 31 minutes of the plan, not the whole plan's fee.
    assert [(m.model, m.usd) for m in got] == [
        ("llama", round(9 * 31 / 60, 2)),
        ("embed", round(3 * 31 / 60, 2)),
    ]
    live = deployment.model_copy(update={"state": DeployState.IN_SERVICE})
    capped = model_costs([row], {"R1": [live]}, made + timedelta(days=5))
    assert capped[0].hours == 48  # until the plan's end, not past it
