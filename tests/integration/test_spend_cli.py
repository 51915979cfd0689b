"""`gpu-bot spend` on the bot's Redis: text, CSV and JSON, and exit 2 for a bad month."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest

from bot.adapters.store import RedisStore
from bot.cli import main
from bot.domain.audit import AuditEntry
from bot.domain.utilisation import Usage
from tests.integration.test_budgets_and_spend import bought


@pytest.fixture
def stored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, redis_url: str, redis_store: RedisStore
) -> RedisStore:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("GPU_BOT_AWS", "GPU_BOT_ACCOUNTS", "GPU_BOT_DEFAULT_ACCOUNT", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GPU_BOT_NAMESPACE", redis_store.prefix.strip("{}"))
    monkeypatch.setenv("GPU_BOT_BUDGETS", "U0REQUESTER=9000")
    used = Usage(used_instance_hours=36, billed_instance_hours=144)
    for record in (
        bought("R1", 4983.55, datetime(2026, 12, 14, tzinfo=UTC)).model_copy(
            update={"usage": used}
        ),
        bought("R2", 1200.0, datetime(2026, 12, 20, tzinfo=UTC)),
        bought("R3", 500.0, datetime(2026, 11, 20, tzinfo=UTC)),
    ):
        entry = AuditEntry(record.id, "test", "seeded", "", record.state.value, record.created_at)
        redis_store.create(record, entry)
    return redis_store


def test_json_has_each_request_and_the_team_total(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spend", "--month", "2026-12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["request"] for r in data["requests"]] == ["R1", "R2"]
    assert data["requests"][0]["used_pct"] == 25.0
    assert data["requests"][1]["used_pct"] is None
    assert data["requests"][0]["paid_usd"] == 4983.55
    assert data["requests"][0]["held_usd"] == 0.0
    assert data["teams"] == [
        {
            "team": "U0REQUESTER",
            "held_usd": 0.0,
            "paid_usd": 6183.55,
            "committed_usd": 6183.55,
            "waiting_for_approvers_usd": 0.0,
            "on_demand_for_hours_measured_usd": 0.0,
            "budget_usd": 9000.0,
            "requests": 2,
        }
    ]
    assert data["total_usd"] == 6183.55


def test_csv_is_one_row_per_request(stored: RedisStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spend", "--month", "2026-11", "--csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    head = rows[0]
    assert head[:4] == ["request", "team", "requester", "option"]
    assert [r[0] for r in rows[1:]] == ["R3"]
    got = dict(zip(head, rows[1], strict=True))
    assert (got["held_usd"], got["paid_usd"], got["paid_is_estimate"]) == ("0.0", "500.0", "False")


def test_text_names_what_was_not_measured(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spend", "--month", "2026-12"]) == 0
    out = capsys.readouterr().out
    assert "Spend in 2026-12: $6,183.55 held or paid" in out
    assert "paid $4,983.55" in out
    assert "25% used" in out and "not measured" in out


def test_a_month_that_is_not_one_exits_2_saying_what_is_accepted(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spend", "--month", "2026-13"]) == 2
    assert "YYYY-MM, e.g. 2026-12" in capsys.readouterr().err


def test_an_unknown_team_exits_2_naming_the_known_ones(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spend", "--month", "2026-12", "--team", "nosuchteam"]) == 2
    err = capsys.readouterr().err
    assert 'There is no team "nosuchteam"' in err and "the teams are U0REQUESTER" in err


def test_a_team_with_a_budget_and_nothing_spent_is_listed_at_0(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["spend", "--month", "2027-01", "--json"]) == 0
    (team,) = json.loads(capsys.readouterr().out)["teams"]
    assert (team["team"], team["committed_usd"], team["budget_usd"]) == (
        "U0REQUESTER",
        0.0,
        9000.0,
    )


FORMULAS = ('=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1")


def test_csv_neutralises_formulas_in_every_text_cell(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """A requester (and so team) whose id starts as a formula is written as text: OWASP's
    single quote in front. Numbers, negative ones too, stay numbers."""
    for n, requester in enumerate(FORMULAS, start=4):
        record = bought(f"R{n}", 100.0 + n, datetime(2026, 11, 10, tzinfo=UTC)).model_copy(
            update={"requester": requester}
        )
        entry = AuditEntry(record.id, "test", "seeded", "", record.state.value, record.created_at)
        stored.create(record, entry)
    assert main(["spend", "--month", "2026-11", "--csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    head = rows[0]
    cells = [dict(zip(head, row, strict=True)) for row in rows[1:]]
    written = {c["requester"] for c in cells if c["request"] != "R3"}
    assert written == {"'" + f for f in FORMULAS}
    assert {c["team"] for c in cells if c["request"] != "R3"} == written
    for cell in (v for row in rows for v in row):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert all(float(c["paid_usd"]) > 0 for c in cells)


def test_a_limited_read_takes_rows_team_by_team_and_counts_them_all(
    redis_store: RedisStore,
) -> None:
    """What /gpu spend reads: every team's count, and only the rows it shows, in team
    order, across teams when the first has fewer than the page."""
    start = datetime(2026, 12, 14, tzinfo=UTC)
    for n, team in enumerate(["a"] * 3 + ["b"] * 4 + ["c"] * 2, start=1):
        record = bought(f"R{n}", 100.0 * n, start).model_copy(update={"team": team})
        entry = AuditEntry(record.id, "test", "seeded", "", record.state.value, record.created_at)
        redis_store.create(record, entry)
    counts, rows = redis_store.month_rows("2026-12", ["a", "b", "c"], 5)
    assert counts == {"a": 3, "b": 4, "c": 2}
    assert [(r.team, r.request_id) for r in rows] == [
        ("a", "R1"),
        ("a", "R2"),
        ("a", "R3"),
        ("b", "R4"),
        ("b", "R5"),
    ]
    _counts, every = redis_store.month_rows("2026-12", ["c", "a"], None)
    assert [r.request_id for r in every] == ["R8", "R9", "R1", "R2", "R3"]
    assert redis_store.month_rows("2026-12", ["nobody"], 5) == ({"nobody": 0}, [])
