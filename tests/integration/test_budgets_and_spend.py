"""Learned utilisation, budgets and spend through the real Slack app on a real Redis.

A block of 2x p5.48xlarge for 3 days costs $4,983.55; one more day, $1,661.18, takes it to
$6,644.73 (see test_extension_money)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from bot.blocks.ids import CallbackId, FormBlock
from bot.domain.audit import AuditEntry
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Choice, Reservation
from bot.domain.utilisation import Usage
from tests import slack_payloads as payloads
from tests.factories import make_record, make_request
from tests.integration.reminder_steps import at
from tests.integration.test_extension_money import ask
from tests.integration.test_extensions import active
from tests.integration.test_slack_flow import REQUEST, quoted, submitted
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, OUTSIDER, REQUESTER, BotUnderTest
from tests.slack_payloads import select, text_input

NO_UTIL = '2x p5.48xlarge 3d from 2026-12-14 ec2 reason="launch load test"'
# The audit actions that record a fee paid (bot/services/purchasing.py, extensions.py).
BOUGHT_ACTIONS = {"purchased", "found before buying", "reconciled", "extension-bought"}


def seed(bot: BotUnderTest, record: CapacityRecord) -> None:
    entry = AuditEntry(record.id, "test", "seeded", "", record.state.value, record.created_at)
    bot.services.store.create(record, entry)


def measured(request_id: str, day: int, used: float, billed: float, **kw: object) -> CapacityRecord:
    return make_record(
        request_id,
        state=State.EXPIRED,
        request=make_request(start=datetime(2026, 11, day, tzinfo=UTC)),
        usage=Usage(used_instance_hours=used, billed_instance_hours=billed),
        **kw,
    )


def bought(
    request_id: str,
    fee: float,
    start: datetime,
    state: State = State.SCHEDULED,
    **kw: object,
) -> CapacityRecord:
    reservation = Reservation(
        kind=OptionKind.CAPACITY_BLOCK,
        id=f"cr-{request_id}",
        region="us-east-1",
        instance_type="p5.48xlarge",
        instances=2,
        start=start,
        end=start + timedelta(days=3),
        fee_usd=fee,
        state="scheduled",
    )
    choice = Choice(kind=OptionKind.CAPACITY_BLOCK, offering_id="x", total_usd=fee)
    return make_record(request_id, state=state, reservation=reservation, choice=choice, **kw)


def asked(bot: BotUnderTest) -> CapacityRecord:
    """The request the test asked for (not one it seeded)."""
    (record,) = [r for r in bot.services.store.for_user(REQUESTER) if r.state is State.QUOTED]
    return record


def quote_text(bot: BotUnderTest, text: str) -> str:
    _reply, token = bot.command(f"reserve {text}")
    bot.wait()
    return json.dumps(bot.responses(token))


def card_text(bot: BotUnderTest) -> str:
    posts = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    updates = [c for c in bot.fake.of("chat.update") if c.args["channel"] == APPROVAL_CHANNEL]
    return (updates or posts)[-1].text_of_blocks()


# --- the learned default ------------------------------------------------------------------


def test_the_teams_last_five_measured_reservations_weighted_by_size_are_the_default(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    # Oldest first; the oldest (100%) is the sixth and is left out. Used over billed of the
    # last five: (10 + 90 + 60 + 0 + 40) / (100 + 100 + 200 + 50 + 50) = 200 / 500 = 40%
    # (their plain mean would be 42%, with the sixth 50%).
    for n, (used, billed) in enumerate(
        [(100, 100), (10, 100), (90, 100), (60, 200), (0, 50), (40, 50)]
    ):
        seed(bot, measured(f"R90{n}", n + 1, used, billed))
    seed(bot, measured("R910", 20, 0, 500, requester=OUTSIDER))  # another team's
    shown = quote_text(bot, NO_UTIL)
    assert "your last 5 reservations ran at 40%: quoted at 40%; `util=` overrides" in shown
    record = asked(bot)
    assert record.request.utilization_pct == 40
    assert record.quote is not None and record.quote.learned is not None


def test_util_given_overrides_what_was_learned(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    seed(bot, measured("R900", 1, 10, 100))
    shown = quote_text(bot, REQUEST)  # util=90%
    assert "ran at" not in shown
    record = asked(bot)
    assert record.request.utilization_pct == 90


def test_without_anything_measured_the_quote_assumes_full_use(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    shown = quote_text(bot, NO_UTIL)
    assert "ran at" not in shown
    record = asked(bot)
    assert record.request.utilization_pct == 100


def test_a_channel_names_the_team_whose_measurements_are_learned(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(teams="ml-research=C0TEAMCHAN")
    seed(bot, measured("R900", 1, 30, 100, team="ml-research", requester=OUTSIDER))
    token, url = bot.new_response_url()
    bot.post(*payloads.slash_command(f"reserve {NO_UTIL}", REQUESTER, url, channel="C0TEAMCHAN"))
    bot.wait()
    shown = json.dumps(bot.responses(token))
    assert "your team ml-research's last one ran at 30%: quoted at 30%" in shown
    record = asked(bot)
    assert record.team == "ml-research"


# --- budgets ------------------------------------------------------------------------------


def test_the_card_shows_the_month_and_over_budget_needs_two_approvers(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000")
    seed(bot, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC)))  # counted
    seed(bot, bought("R901", 700.0, datetime(2026, 11, 28, tzinfo=UTC)))  # November
    seed(bot, bought("R902", 900.0, datetime(2026, 12, 3, tzinfo=UTC), State.REJECTED))
    request_id = submitted(bot)
    record = bot.record(request_id)
    assert record.required_approvals == 2
    assert record.budget is not None and record.budget.before_usd == 2000.0
    card = card_text(bot)
    assert (
        f"{REQUESTER}: $2,000 of $6,000 held or paid in 2026-12; this request takes it to $6,984"
        in card
    )
    assert "over budget" in card


def test_within_budget_one_approver_is_enough(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=9000")
    seed(bot, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC)))
    request_id = submitted(bot)
    assert bot.record(request_id).required_approvals == 1
    assert "this request takes it to $6,984" in card_text(bot)
    assert "over budget" not in card_text(bot)
    # The approver confirms the amount, and sees the month again.
    confirm = json.dumps(bot.approval_form(request_id, APPROVER))
    assert "$2,000 of $9,000 held or paid in 2026-12; this request takes it to $6,984" in confirm


def test_over_budget_is_refused_when_the_setting_says_so(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000", over_budget="refuse")
    seed(bot, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC)))
    request_id = quoted(bot)
    token, response_url = bot.new_response_url()
    bot.submit_view(
        CallbackId.SUBMIT.value,
        {
            FormBlock.CHOICE.value: select("capacity-block:0"),
            FormBlock.REASON.value: text_input("x"),
        },
        REQUESTER,
        json.dumps({"request": request_id, "response_url": response_url}),
    )
    bot.wait()
    said = json.dumps(bot.responses(token))
    assert "$983.55 over its $6,000.00 budget ($2,000.00 held or paid so far)" in said
    assert bot.record(request_id).state is State.QUOTED
    assert bot.record(request_id).budget is None


def test_an_extension_over_budget_needs_two_approvers_and_says_where_it_takes_the_month(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000")
    active(bot)  # R1 bought: $4,983.55, its own approval within the budget
    ask(bot)
    ext = bot.record("R1").extension
    assert ext is not None and ext.required_approvals == 2
    assert ext.budget is not None and ext.budget.after_usd == 6644.73
    shown = "\n".join(c.text_of_blocks() for c in bot.fake.of("chat.postMessage"))
    assert "$4,984 of $6,000 held or paid in 2026-12; this extension takes it to $6,645" in shown


def test_an_extension_over_budget_is_refused_when_the_setting_says_so(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000", over_budget="refuse")
    active(bot)
    answer = ask(bot)
    assert "cannot be extended" in answer and "over its $6,000.00 budget" in answer
    assert bot.record("R1").extension is None


# --- the spend report ---------------------------------------------------------------------


def test_the_spend_report_adds_up_to_the_audit_trail(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    ids = [
        submitted(bot),
        submitted(bot, '1x p5.48xlarge 2d from 2026-12-20 ec2 util=90% reason="an eval"'),
    ]
    for request_id in ids:
        bot.approve(request_id, APPROVER)
        bot.wait()
    # The oracle: what the audit trail says was paid, entry by entry.
    paid = sum(
        e.usd or 0.0
        for request_id in ids
        for e in bot.services.store.audit(request_id, limit=1000)
        if e.action in BOUGHT_ACTIONS
    )
    assert paid > 4983
    report = bot.services.spending.report("2026-12")
    assert report.total_usd == round(paid, 2)
    assert [(r.request_id, r.team, r.used_pct) for r in report.rows] == [
        (ids[0], REQUESTER, None),
        (ids[1], REQUESTER, None),
    ]
    _reply, token = bot.command("spend 2026-12", APPROVER)
    bot.wait()
    shown = json.dumps(bot.responses(token))
    assert f"GPU spend in 2026-12: ${round(paid, 2):,.2f} held or paid" in shown
    assert "not measured" in shown


def test_a_month_that_is_not_one_is_refused_in_the_ack(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _token = bot.command("spend 2026-13")
    assert '"2026-13" is not a month: a month as YYYY-MM, e.g. 2026-12' in reply.body


def test_others_see_only_their_own_teams_spend(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    seed(bot, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC)))
    _reply, token = bot.command("spend 2026-12 someone-else", OUTSIDER)
    bot.wait()
    assert "Only approvers see other teams' spend" in json.dumps(bot.responses(token))
    _reply, token = bot.command("spend 2026-12", OUTSIDER)
    bot.wait()
    assert "$0.00 held or paid" in json.dumps(bot.responses(token))


def test_the_monthly_summary_is_posted_once_on_the_first_even_with_two_workers(make_bot) -> None:  # type: ignore[no-untyped-def]
    one, two = make_bot(), make_bot()
    seed(one, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC)))
    at(one, datetime(2026, 12, 20, tzinfo=UTC))
    one.services.spend_summary.seed()
    two.services.spend_summary.seed()
    at(one, datetime(2027, 1, 1, 0, 1, tzinfo=UTC))
    one.wait()
    two.wait()
    two.services.spend_summary.seed()  # a worker started after it ran: next month's only
    one.wait()
    posts = [c for c in one.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    summaries = [c for c in posts if "GPU spend in 2026-12" in c.text_of_blocks()]
    assert len(summaries) == 1
    assert "$2,000.00 held or paid" in summaries[0].text_of_blocks()
    assert "<@" not in json.dumps(summaries[0].blocks())  # nobody is pinged by it


def test_a_user_group_names_the_team_before_the_channel_and_its_budget_is_shown(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(teams="ml=S0MLTEAM;infra=C0REQUESTS", budgets="ml=9000,infra=100")
    bot.fake.groups["S0MLTEAM"] = [REQUESTER]
    seed(bot, bought("R900", 2000.0, datetime(2026, 12, 2, tzinfo=UTC), team="ml"))
    seed(bot, bought("R901", 50.0, datetime(2026, 12, 2, tzinfo=UTC), team="infra"))
    request_id = submitted(bot)  # asked in C0REQUESTS, infra's channel
    record = bot.record(request_id)
    assert record.team == "ml" and record.required_approvals == 1
    assert (
        "ml: $2,000 of $9,000 held or paid in 2026-12; this request takes it to $6,984"
        in card_text(bot)
    )


def test_a_worker_that_starts_schedules_this_months_summary(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_worker_loop import running, wait_until

    bot = make_bot()
    job = "spend-summary:2026-11"  # the clock stands in November
    with running(bot.worker):
        wait_until(lambda: bot.services.store.due_at(job) is not None)
    assert bot.services.store.due_at(job) == datetime(2026, 12, 1, tzinfo=UTC)


def test_a_quote_alone_is_priced_at_the_learned_util_too(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    seed(bot, measured("R900", 1, 60, 100))
    _reply, token = bot.command("quote 2x p5.48xlarge 3d from 2026-12-14 ec2")
    bot.wait()
    shown = json.dumps(bot.responses(token))
    assert "your last one ran at 60%: quoted at 60%" in shown
    assert "60% expected utilisation" in shown


def test_a_team_whose_group_cannot_be_read_is_not_skipped(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(teams="ml=S0MLTEAM", budgets="ml=9000")
    bot.fake.groups["S0MLTEAM"] = [REQUESTER]
    bot.fake.refuse("usergroups.users.list", "ratelimited_but_not_429", times=1)
    bot.expect_crashes()
    bot.command(f"reserve {REQUEST}")
    bot.wait()  # the open job failed once: no request stored for the wrong team
    assert bot.services.store.for_user(REQUESTER) == []
    bot.clock.set(bot.clock.now() + timedelta(minutes=5))
    bot.wait()  # retried, the group read
    (record,) = bot.services.store.for_user(REQUESTER)
    assert record.team == "ml"
