"""Teams, budgets and the learned default as pure rules, and their settings' start-up
errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config import ConfigError, load_settings
from bot.domain.approval import Spend, judge_budget
from bot.domain.budgets import BudgetCheck, OverBudget, parse_month
from bot.domain.learning import learned_util
from bot.domain.lifecycle import State
from bot.domain.teams import Team, parse_teams, team_of
from bot.domain.utilisation import Usage
from tests.factories import make_record, make_request


def _measured(n: int, used: float, billed: float, team: str | None = None):  # type: ignore[no-untyped-def]
    return make_record(
        f"R{n}",
        state=State.EXPIRED,
        team=team,
        request=make_request(start=datetime(2026, 11, n, tzinfo=UTC)),
        usage=Usage(used_instance_hours=used, billed_instance_hours=billed),
    )


def test_the_learned_util_weighs_by_billed_hours_over_the_last_five() -> None:
    records = [
        _measured(n + 1, u, b)
        for n, (u, b) in enumerate([(100, 100), (10, 100), (90, 100), (60, 200), (0, 50), (40, 50)])
    ]
    got = learned_util(records, "U0REQUESTER")
    # 200 used of 500 billed in the five newest.
    assert got is not None and (got.pct, got.reservations) == (40, 5)
    assert learned_util(records, "U0SOMEONE") is None
    assert learned_util([_measured(1, 0, 0)], "U0REQUESTER") is None  # nothing billed yet


def test_the_learned_util_is_never_zero() -> None:
    got = learned_util([_measured(1, 0, 100)], "U0REQUESTER")
    assert got is not None and got.pct == 1


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
    from bot.domain.comparison import OptionKind
    from bot.domain.records import Choice
    from tests.unit.test_comparison import quote, req

    return make_record(
        request_id,
        state=State.EXPIRED,
        team=team,
        quote=quote(req()),
        choice=Choice(kind=OptionKind.CAPACITY_BLOCK, offering_id="x", total_usd=fee),
        **kw,
    )


def test_the_report_prices_the_hours_used_at_on_demand_and_sums_per_team() -> None:
    from bot.domain.deployment.record import CostLine, Deployment
    from bot.domain.spend import spend_report
    from tests.unit.test_comparison import OD

    used = Usage(used_instance_hours=72, billed_instance_hours=144)
    records = [
        _bought("R1", 4983.55, "ml", usage=used),
        _bought("R2", 1000.0, "ml"),
        _bought("R3", 250.0, "infra"),
        _bought("R4", 99.0, "infra", request=make_request(start=datetime(2027, 1, 2, tzinfo=UTC))),
        _bought("R5", 77.0, "infra").model_copy(update={"state": State.REJECTED}),
    ]
    costs = (
        CostLine(model="llama", share=0.75, on_demand_usd_per_hour=None, reserved_usd_per_hour=9),
        CostLine(model="embed", share=0.25, on_demand_usd_per_hour=None, reserved_usd_per_hour=3),
    )
    deployment = Deployment.model_construct(id="D1", request_id="R1", costs=costs)
    report = spend_report(
        records, "2026-12", budgets={"ml": 8000}, deployments={"R1": [deployment]}
    )
    assert [r.request_id for r in report.rows] == ["R3", "R1", "R2"]
    r1 = report.rows[1]
    assert (r1.used_pct, r1.on_demand_usd) == (50.0, round(72 * OD, 2))
    assert report.rows[2].used_pct is None and report.rows[2].on_demand_usd is None
    totals = {t.team: (t.committed_usd, t.budget_usd) for t in report.teams}
    assert totals == {"infra": (250.0, None), "ml": (5983.55, 8000)}
    assert report.total_usd == 6233.55
    assert [(m.model, m.usd) for m in report.models] == [
        ("llama", round(0.75 * 4983.55, 2)),
        ("embed", round(0.25 * 4983.55, 2)),
    ]
    only = spend_report(records, "2026-12", team="infra")
    assert [r.request_id for r in only.rows] == ["R3"]
