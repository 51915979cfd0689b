"""Watches through Slack: signed `/gpu watch` commands into the real app, rounds run by the
real worker on real Redis against the sandbox market, the match DM read at the fake Web
API, its Submit for approval taken through the normal flow."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from bot.services.jobs import RetryLater
from tests import slack_payloads as payloads
from tests.integration.test_slack_flow import action_ids, submit_form
from tests.slack_harness import APPROVER, OUTSIDER, REQUESTER, BotUnderTest

START = datetime(2026, 12, 14, tzinfo=UTC)
WATCH = "8x p5.48xlarge 3d from 2026-12-14 flex=7d us-east-1 ec2"


def dms(bot: BotUnderTest, user: str = REQUESTER, about: str = "found it") -> list[dict[str, Any]]:
    """The DMs (chat.postMessage to the user) whose blocks say `about`."""
    return [
        c.args
        for c in bot.fake.of("chat.postMessage")
        if c.args.get("channel") == user and about in json.dumps(c.args.get("blocks") or [])
    ]


def hold_everything(bot: BotUnderTest) -> None:
    """Others hold every p5.48xlarge block in us-east-1 for the next 9 weeks."""
    now = bot.clock.now()
    bot.market.conditions.moves.take("p5.48xlarge", "us-east-1", now, now + timedelta(weeks=9))


def release(bot: BotUnderTest, day: datetime = START + timedelta(days=2)) -> None:
    bot.market.conditions.moves.release("p5.48xlarge", "us-east-1", day, day + timedelta(days=4))


def watched(bot: BotUnderTest, text: str = WATCH, user: str = REQUESTER) -> str:
    reply, _ = bot.command(f"watch {text}", user)
    assert reply.status == 200
    assert "Watching W" in reply.body, reply.body
    bot.wait()
    return reply.body.split("Watching ", 1)[1].split(":", 1)[0]


def later(bot: BotUnderTest, delta: timedelta = timedelta(hours=1)) -> None:
    bot.clock.advance(delta)
    bot.wait()


def test_a_watch_finds_the_block_once_and_submit_enters_the_approval_flow(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    hold_everything(bot)
    watch_id = watched(bot)
    assert watch_id == "W1" and dms(bot) == []
    _reply, token = bot.command("status W1")
    bot.wait()
    assert "Nothing offered for it yet" in json.dumps(bot.responses(token))
    release(bot)
    later(bot)
    (dm,) = dms(bot)
    assert ActionId.SUBMIT_OPEN.value in action_ids(dm["blocks"])
    record = bot.record("R1")
    assert record.state is State.QUOTED and record.requester == REQUESTER
    assert record.request.start == START + timedelta(days=2, hours=11, minutes=30)
    assert record.quote is not None and record.quote.recommendation.kind is not None
    assert record.quote.recommendation.kind.value == "capacity-block"
    reply = submit_form(bot, "R1", "capacity-block:0", "load test before launch")
    assert reply.status == 200 and reply.body == ""
    bot.wait()
    submitted = bot.record("R1")
    assert submitted.state is State.PENDING_APPROVAL
    bot.approve("R1", APPROVER)
    bot.wait()
    assert bot.record("R1").state in (State.PAYMENT_PENDING, State.SCHEDULED)
    assert bot.purchase_calls() == 1
    for _ in range(3):  # later rounds see the same block: never sent again
        later(bot)
    assert len(dms(bot)) == 1
    history = bot.services.watches.history("W1")
    assert [e.action for e in history] == ["match sent"]


def test_a_better_match_is_sent_again_and_a_slightly_cheaper_one_is_not(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    watched(bot)
    assert len(dms(bot)) == 1  # the market has blocks from the start: the first round
    bot.market.conditions.price_factor = 0.97  # 3% cheaper: not worth a message
    later(bot)
    assert len(dms(bot)) == 1
    bot.market.conditions.price_factor = 0.9  # 10% cheaper than the one sent
    later(bot)
    assert len(dms(bot)) == 2
    assert len(bot.services.watches.history("W1")) == 2
    # The better one replaces the earlier: its request withdrawn, and said so.
    assert bot.record("R1").state is State.CANCELLED
    assert bot.record("R2").state is State.QUOTED
    assert "Withdrew R1, the earlier match" in json.dumps(dms(bot)[-1]["blocks"])
    _reply, token = bot.command("status W1")
    bot.wait()
    shown = json.dumps(bot.responses(token), ensure_ascii=False)
    assert "Matches, as the requests they made: *R1* cancelled · *R2* quoted" in shown


def test_with_auto_submit_a_better_match_never_leaves_two_pending(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    watched(bot, f'{WATCH} auto=submit reason="launch load test"')
    assert bot.record("R1").state is State.PENDING_APPROVAL
    bot.market.conditions.price_factor = 0.9
    later(bot)
    assert bot.record("R2").state is State.PENDING_APPROVAL
    assert bot.record("R1").state is State.CANCELLED
    (better,) = [d for d in dms(bot) if "Submitted R2" in json.dumps(d["blocks"])]
    assert "Withdrew R1, the earlier match" in json.dumps(better["blocks"])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"{WATCH.replace('flex=7d', 'flex=-1d')}", "negative"),
        (f"{WATCH} max=0", "more than 0"),
        (f"{WATCH} until=2026-11-01", "in the past"),
        ("8x g5.48xlarge 3d from 2026-12-14 us-east-1", "AWS does not sell"),
        ("100x p5.48xlarge 3d from 2026-12-14 us-east-1 ec2", "AWS does not sell"),
        ("8x p5.48xlarge 3d from 2026-12-14 region=mars-1", "not an AWS region"),
        ("8x p5.48xlarge from 2026-12-14", "needs duration"),
        ("8x p5.48xlarge 3d from 2027-03-01 us-east-1", "at most 8 weeks ahead"),
    ],
)
def test_bad_watches_are_refused_in_the_ack_and_nothing_is_stored(
    make_bot: Any, text: str, said: str
) -> None:
    bot = make_bot()
    reply, _ = bot.command(f"watch {text}")
    assert reply.status == 200
    assert "Not watching" in reply.body and said in reply.body, reply.body
    bot.wait()
    assert bot.services.watches.listed(APPROVER) == ([], True)
    assert bot.services.store.next_due() is None
    assert bot.fake.of("chat.postMessage") == []


def test_auto_submit_puts_the_match_to_the_approvers_at_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    watched(bot, f'{WATCH} auto=submit reason="launch load test"')
    record = bot.record("R1")
    assert record.state is State.PENDING_APPROVAL
    assert record.reason == "launch load test"
    assert record.choice is not None and record.choice.offering_id is not None
    (dm,) = dms(bot)
    assert "Submitted R1 for approval" in json.dumps(dm["blocks"])
    assert ActionId.SUBMIT_OPEN.value not in action_ids(dm["blocks"])
    assert bot.purchase_calls() == 0  # the approvers still decide


def test_a_watch_with_a_reason_but_without_auto_submit_submits_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    watched(bot, f'{WATCH} reason="launch load test"')
    record = bot.record("R1")
    assert record.state is State.QUOTED  # the requester submits it, or not
    assert record.reason == "launch load test"  # kept for the form
    (dm,) = dms(bot)
    assert ActionId.SUBMIT_OPEN.value in action_ids(dm["blocks"])
    assert "Submitted R1" not in json.dumps(dm["blocks"])
    assert [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] != REQUESTER] == []
    assert bot.services.store.waiting_for(APPROVER) == ([], 0)


def test_watches_asking_the_same_share_one_aws_call_per_round(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    hold_everything(bot)
    for n in range(6):
        watched(bot, WATCH, user=f"U0WATCHER{n}")
    watched(bot, WATCH.replace("3d", "2d"), user="U0OTHER")
    calls = bot.services.watch_search.calls
    assert calls == 2  # one question for six watches, one for the seventh
    release(bot)
    later(bot)
    assert bot.services.watch_search.calls == calls + 2
    for n in range(6):
        assert len(dms(bot, f"U0WATCHER{n}")) == 1
    assert len(dms(bot, "U0OTHER")) == 1


def test_a_round_run_twice_at_once_records_each_match_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    """As when a worker's lease runs out mid-round (killed, or stalled) and a second worker
    runs the same round: both see the match, one records it."""
    one, two = make_bot(), make_bot()
    for bot in (one, two):  # each replica has its simulated market: the same one
        hold_everything(bot)
    watched(one)
    for bot in (one, two):
        release(bot)
    one.clock.advance(timedelta(hours=1))
    (job_id, _due) = one.services.store.next_due() or ("", None)
    payload = one.services.store.redis.hget(one.services.store.key("jobs"), job_id)
    round_payload = json.loads(payload)["payload"]
    for bot in (one, two):
        with pytest.raises(RetryLater):
            bot.services.jobs.run("watch-round", round_payload)
    one.wait()
    two.wait()
    assert len(dms(one)) == 1
    assert len(one.services.watches.history("W1")) == 1


def test_a_watch_that_ends_with_nothing_says_the_best_it_saw(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    watched(bot, f"{WATCH} max=5/h until=2026-12-02")
    assert dms(bot) == []
    later(bot, timedelta(days=3))
    (end,) = [
        c.args for c in bot.fake.of("chat.postMessage") if "has ended" in str(c.args.get("text"))
    ]
    assert "nothing found that fits" in end["text"]
    assert "over max $5.00/instance-hour" in end["text"]
    assert bot.services.watches.live_of(REQUESTER) == []
    later(bot, timedelta(hours=2))  # its rounds stop; nothing is said twice
    assert len([c for c in bot.fake.of("chat.postMessage") if "has ended" in str(c.args)]) == 1


def test_only_the_watcher_or_an_approver_stops_a_watch_and_approvers_list_everyones(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    hold_everything(bot)
    watched(bot)
    _reply, token = bot.command("unwatch W1", OUTSIDER)
    bot.wait()
    assert "There is no watch W1 of yours" in json.dumps(bot.responses(token))
    _reply, token = bot.command("watches", APPROVER)
    bot.wait()
    listed = json.dumps(bot.responses(token))
    assert "Everyone's watches" in listed and "W1" in listed
    _reply, token = bot.command("unwatch W1", APPROVER)
    bot.wait()
    assert "Stopped W1" in json.dumps(bot.responses(token))
    release(bot)
    later(bot)
    assert dms(bot) == []


def test_a_describe_limit_is_told_once_and_not_retried(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.market.conditions.throttle(50, "DescribeCapacityBlockOfferings")
    watched(bot)
    later(bot)
    later(bot)
    ended = [c.args for c in bot.fake.of("chat.postMessage") if "has ended" in str(c.args)]
    assert len(ended) == 1
    assert "CapacityBlockDescribeLimitExceeded" in ended[0]["text"]
    assert bot.services.watch_search.calls == 1


def test_app_home_lists_the_watches_and_its_stop_button_stops_one(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    hold_everything(bot)
    watched(bot)
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    home = json.dumps(bot.fake.of("views.publish")[-1].view())
    assert "Your watches" in home and "W1" in home and ActionId.WATCH_STOP.value in home
    bot.click(ActionId.WATCH_STOP.value, "W1", REQUESTER, container="home")
    bot.wait()
    assert bot.services.watches.live_of(REQUESTER) == []
    assert "Your watches" not in json.dumps(bot.fake.of("views.publish")[-1].view())


def test_a_watch_survives_a_restart(make_bot) -> None:  # type: ignore[no-untyped-def]
    first = make_bot()
    hold_everything(first)
    watched(first)
    first.close()
    second = make_bot()  # a new process on the same Redis: it finds the watch and its round
    release(second)
    later(second)
    assert len(dms(second)) == 1


def test_region_any_asks_each_region_the_catalog_lists(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _ = bot.command("watch 8x p5.48xlarge 3d from 2026-12-14 region=any ec2")
    assert "Watching W1" in reply.body
    regions = bot.services.catalog.instance("p5.48xlarge").capacity_blocks.regions
    assert len(regions) > 1 and all(r in reply.body for r in regions)
    bot.wait()
    assert bot.services.watch_search.calls == len(regions)  # a question per region
    assert dms(bot)  # a later region's block is sent too only when 5% cheaper


def test_a_throttled_round_backs_off_and_keeps_watching(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.market.conditions.throttle(100, "SearchTrainingPlanOfferings")
    watched(bot, "8x p5.48xlarge 3d from 2026-12-14 flex=7d us-east-1 sagemaker")
    (job_id, due) = bot.services.store.next_due() or ("", None)
    assert job_id.startswith("watch-round:") and due is not None
    assert due - bot.clock.now() >= timedelta(minutes=1)  # backed off, not at once
    assert bot.services.watches.live_of(REQUESTER) != []  # throttling ends nothing
    bot.market.conditions.throttle(0, "SearchTrainingPlanOfferings")
    later(bot, timedelta(minutes=2))
    assert len(dms(bot)) == 1
