"""One figure everywhere: each kind of request walked through its life through the real app
(signed Slack payloads, the sandbox market, real Redis), and at each step the held and paid
figures the ledger keeps are the ones the approval card, `/gpu status`, App Home,
`/gpu spend`, `gpu-bot spend` (text, CSV and JSON), `gpu-bot requests list --json` and the
report card show. The oracle is the record's ledger (its entries' sum), never a surface.

Each surface reads the ledger's `held $X` / `paid $Y` words; a surface that recomputed its
money (from the quote, the fee, the window) would show another figure at some step here."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from typing import Any

import pytest

from bot.blocks.ids import ActionId
from bot.cli import main
from bot.domain.lifecycle import State
from bot.domain.money import Money
from tests import slack_payloads as payloads
from tests.integration.reminder_steps import at
from tests.integration.test_extension_money import ask
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, REQUESTER, BotUnderTest

MIN = timedelta(minutes=1)
H = timedelta(hours=1)
MONTH = "2026-12"


def usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def words(money: Money, entries: int) -> list[str]:
    """The ledger's figures as every surface words them (a zero figure is not shown; a
    request with no entry yet shows what it asks for, which is no figure of the ledger)."""
    if not entries:
        return []
    shown = [f"held {usd(money.held)}"] if money.held else []
    if money.paid or not money.held:
        shown.append(f"paid ~{usd(money.paid)}" if money.estimate else f"paid {usd(money.paid)}")
    return shown


# --- the surfaces -------------------------------------------------------------------------


def approval_card(bot: BotUnderTest, request_id: str) -> str:
    calls = [
        c
        for c in [*bot.fake.of("chat.postMessage"), *bot.fake.of("chat.update")]
        if c.args["channel"] == APPROVAL_CHANNEL
        and f"GPU request {request_id}:" in c.text_of_blocks()
    ]
    return calls[-1].text_of_blocks()


def ephemeral(bot: BotUnderTest, command: str, user: str = REQUESTER) -> str:
    _reply, token = bot.command(command, user)
    bot.wait()
    return json.dumps(bot.responses(token), ensure_ascii=False)


def app_home(bot: BotUnderTest, user: str = REQUESTER) -> str:
    bot.post(*payloads.event({"type": "app_home_opened", "user": user, "tab": "home"}))
    bot.wait()
    return json.dumps(bot.fake.of("views.publish")[-1].view(), ensure_ascii=False)


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def app_home_lines(home: str, request_id: str) -> str:
    """Where App Home names the request (its reservations and its requests)."""
    return "\n".join(part for part in home.split('"text": "') if f"*{request_id}*" in part)


def status_money(status: str) -> str:
    """/gpu status's Total field and Money line (not the ledger's history under it)."""
    return "\n".join(re.findall(r"\*(?:Total|Money)\*:?(?:\\n| )[^\\\"]*", status))


def figures_in(text: str) -> set[str]:
    return set(re.findall(r"\b(?:held|paid|released) ~?\$[\d,]+\.\d\d", text))


def spend_line(text: str, request_id: str) -> str | None:
    """The request's line in /gpu spend (None: not listed)."""
    lines = [part for part in text.split("\\n") if part.startswith(f"\u2022 {request_id} ")]
    assert len(lines) <= 1, lines
    return lines[0] if lines else None


def cli_spend_line(text: str, request_id: str) -> str | None:
    lines = [part for part in text.splitlines() if part.split()[:1] == [request_id]]
    assert len(lines) <= 1, lines
    return lines[0] if lines else None


def check_agree(
    bot: BotUnderTest, request_id: str, capsys: pytest.CaptureFixture[str], step: str
) -> Money:
    """Every surface shows the ledger's figures for the request at this step."""
    record = bot.record(request_id)
    money = record.money
    want = words(money, len(record.ledger))
    texts: dict[str, str | None] = {
        "approval card": approval_card(bot, request_id),
        "/gpu status": status_money(ephemeral(bot, f"status {request_id}")),
        "App Home": app_home_lines(app_home(bot), request_id),
        "/gpu spend": spend_line(ephemeral(bot, f"spend {MONTH}", APPROVER), request_id),
        "gpu-bot spend": cli_spend_line(cli(["spend", "--month", MONTH], capsys), request_id),
    }
    for surface, text in texts.items():
        if text is None:  # spend lists a request from its approval on
            assert money == Money(), f"{step}: {surface} does not list {request_id}"
            continue
        for figure in want:
            assert figure in text, f"{step}: {surface} does not say {figure!r}:\n{text}"
        # Released (what stopped being owed) is shown where there is room; never another.
        others = figures_in(text) - {*want, f"released {usd(money.released)}"}
        assert not others, f"{step}: {surface} says {others}, the ledger {want}:\n{text}"
    held, paid = money.held / 100, money.paid / 100
    report = json.loads(cli(["spend", "--month", MONTH, "--json"], capsys))
    rows = [
        (r["held_usd"], r["paid_usd"]) for r in report["requests"] if r["request"] == request_id
    ]
    assert rows == ([(held, paid)] if texts["gpu-bot spend"] else []), f"{step}: spend --json"
    table = csv.DictReader(io.StringIO(cli(["spend", "--month", MONTH, "--csv"], capsys)))
    lines = [
        (float(r["held_usd"]), float(r["paid_usd"])) for r in table if r["request"] == request_id
    ]
    assert lines == rows, f"{step}: spend --csv"
    listed = json.loads(cli(["requests", "list", "--json"], capsys))
    (item,) = [r for r in listed if r["id"] == request_id]
    assert (item["held_usd"], item["paid_usd"]) == (held, paid), f"{step}: requests --json"
    return money


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: object, redis_url: str) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("GPU_BOT_AWS", "GPU_BOT_ACCOUNTS", "GPU_BOT_DEFAULT_ACCOUNT", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)


@pytest.fixture
def bot(make_bot: Any, cli_env: None, monkeypatch: pytest.MonkeyPatch) -> BotUnderTest:
    made: BotUnderTest = make_bot()
    monkeypatch.setenv("GPU_BOT_NAMESPACE", made.services.store.prefix.strip("{}"))
    return made


def report_card(bot: BotUnderTest, request_id: str) -> str:
    cards = [
        c.text_of_blocks()
        for c in bot.fake.of("chat.postMessage")
        if f"report:{request_id}" in str(c.args.get("metadata", "")) and c.answer.get("ok")
    ]
    assert len(cards) == 1, cards
    return cards[0]


def to_the_end(bot: BotUnderTest, request_id: str) -> None:
    """Past the window's end, the cleanup's first look and the report card (paced DMs)."""
    end = bot.record(request_id).window[1]
    at(bot, end + 3 * MIN)
    at(bot, end + 5 * MIN)


# --- the walks ----------------------------------------------------------------------------


BLOCK = '2x p5.48xlarge 3d from 2026-12-14 ec2 util=90% reason="load test"'


def test_a_capacity_block_with_an_extension(
    bot: BotUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = submitted(bot, BLOCK, pick="capacity-block:0")
    assert check_agree(bot, rid, capsys, "submitted") == Money()
    bot.approve(rid, APPROVER)
    bot.wait()
    fee = check_agree(bot, rid, capsys, "bought, payment pending")
    assert fee.held > 0 and fee.paid == 0
    res = bot.record(rid).reservation
    assert res is not None
    at(bot, res.start + MIN)
    assert check_agree(bot, rid, capsys, "active") == Money(paid=fee.held)
    at(bot, res.end - 24 * H)
    at(bot, res.end - 24 * H + MIN)
    ask(bot)
    bot.approve(f"{rid}|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    extended = check_agree(bot, rid, capsys, "extended")
    assert extended.paid > fee.held
    to_the_end(bot, rid)
    assert bot.record(rid).state in (State.EXPIRED, State.CLEANED_UP)
    final = check_agree(bot, rid, capsys, "ended")
    assert final.paid == extended.paid
    assert f"Paid: {usd(final.paid)}" in report_card(bot, rid)


def test_a_training_plan(bot: BotUnderTest, capsys: pytest.CaptureFixture[str]) -> None:
    rid = submitted(
        bot, '2x p5.48xlarge 4d from 2026-12-14 sagemaker reason="fine-tune"', "training-plan:0"
    )
    bot.approve(rid, APPROVER)
    bot.wait()
    check_agree(bot, rid, capsys, "bought")
    res = bot.record(rid).reservation
    assert res is not None
    at(bot, res.start + MIN)
    paid = check_agree(bot, rid, capsys, "active").paid
    assert paid > 0
    to_the_end(bot, rid)
    assert check_agree(bot, rid, capsys, "ended").paid == paid
    assert f"Paid: {usd(paid)}" in report_card(bot, rid)


@pytest.mark.parametrize("pick", ["on-demand:0", "spot:0"])
def test_pay_as_you_go_holds_its_most_then_pays_what_was_measured(
    bot: BotUnderTest, capsys: pytest.CaptureFixture[str], pick: str
) -> None:
    text = '2x g5.12xlarge 2d from 2026-12-14 util=50% interruptible reason="eval"'
    rid = submitted(bot, text, pick)
    bot.approve(rid, APPROVER)
    bot.wait()
    most = check_agree(bot, rid, capsys, "approved")
    assert most.held > 0 and most.paid == 0
    to_the_end(bot, rid)
    ended = check_agree(bot, rid, capsys, "ended")
    # Nothing ran: an estimate of $0, and the request still listed in the month at $0.
    assert ended.held == 0 and ended.paid == 0 and ended.estimate


def test_an_on_demand_capacity_reservation_released_early(
    bot: BotUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = submitted(
        bot,
        '2x p5.48xlarge 3d from 2026-12-14 ec2 util=90% reason="eval"',
        "on-demand-reservation:0",
    )
    bot.approve(rid, APPROVER)
    bot.wait()
    check_agree(bot, rid, capsys, "approved")
    start = bot.record(rid).window[0]
    at(bot, start + MIN)
    whole = check_agree(bot, rid, capsys, "reserved")
    at(bot, start + 24 * H)
    bot.click(ActionId.RELEASE.value, rid, REQUESTER)
    bot.wait()
    at(bot, start + 24 * H + 5 * MIN)
    released = check_agree(bot, rid, capsys, "released")
    assert 0 < released.paid < whole.held
    card = approval_card(bot, rid)
    assert "AWS: active" not in card


def test_a_request_that_timed_out_shows_nothing_paid(
    bot: BotUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = submitted(bot, BLOCK, pick="capacity-block:0")
    start = bot.record(rid).window[0]
    at(bot, start + H)
    assert bot.record(rid).state is State.TIMED_OUT
    assert check_agree(bot, rid, capsys, "timed out") == Money()
