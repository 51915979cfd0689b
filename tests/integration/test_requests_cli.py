"""`gpu-bot requests` and `gpu-bot reservations` on the bot's Redis: the JSON contract,
the flags, exit 2 on bad input."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from bot.adapters.store import RedisStore
from bot.cli import main
from bot.domain.audit import AuditEntry
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.records import Choice, Reservation
from tests.factories import NOW, make_record


@pytest.fixture
def stored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, redis_url: str, redis_store: RedisStore
) -> RedisStore:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("GPU_BOT_AWS", "GPU_BOT_ACCOUNTS", "GPU_BOT_DEFAULT_ACCOUNT", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GPU_BOT_NAMESPACE", redis_store.prefix.strip("{}"))
    reservation = Reservation(
        kind=OptionKind.CAPACITY_BLOCK,
        id="cr-0123456789abcdef0",
        region="us-east-1",
        availability_zone="us-east-1a",
        instance_type="p5.48xlarge",
        instances=2,
        start=NOW + timedelta(days=14),
        end=NOW + timedelta(days=17),
        fee_usd=4983.55,
        state="scheduled",
    )
    record = make_record(
        state=State.SCHEDULED,
        choice=Choice(kind=OptionKind.CAPACITY_BLOCK, offering_id="cb-1", total_usd=4983.55),
        reservation=reservation,
    )
    entry = AuditEntry("R1", "U0ALICE", "created", "draft", "draft", NOW)
    redis_store.create(record, entry)
    redis_store.create(make_record("R2"), AuditEntry("R2", "U0B", "created", "draft", "draft", NOW))
    return redis_store


def test_show_gives_the_record_its_reservation_and_audit(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["requests", "show", "r1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == "R1" and data["state"] == "scheduled"
    assert data["choice"]["kind"] == "capacity-block"
    held = data["reservation"]
    assert {"kind", "id", "account", "state", "start", "end", "instances", "fee_usd"} <= set(held)
    assert held["id"] == "cr-0123456789abcdef0" and held["account"] == "default"
    assert held["fee_usd"] == 4983.55 and held["instances"] == 2
    assert [e["action"] for e in data["audit"]] == ["created"]


def test_list_filters_by_state(stored: RedisStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requests", "list", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["R1", "R2"]
    assert main(["requests", "list", "--state", "draft", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["R2"] and rows[0]["reservation"] is None


def test_bad_input_exits_2_and_says_what_is_accepted(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["requests", "show", "R99"]) == 2
    assert "no request" in capsys.readouterr().err
    assert main(["requests", "list", "--state", "bought"]) == 2
    assert "purchase_unknown" in capsys.readouterr().err
    assert main(["reservations", "--account", "nope"]) == 2
    assert "one of: default" in capsys.readouterr().err


def test_reservations_flags_a_request_whose_reservation_aws_does_not_hold(
    stored: RedisStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reservations", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["request"], r["id"], r["flags"]) for r in rows] == [
        ("R1", "cr-0123456789abcdef0", ["missing in AWS"])
    ]
    assert {
        "request",
        "kind",
        "id",
        "account",
        "state",
        "start",
        "end",
        "instances",
        "fee_usd",
        "flags",
    } <= set(rows[0])
