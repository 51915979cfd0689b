"""Reminders on a real Redis, the real Bolt app and worker, the sandbox market and the fake
Web API, moved by the controllable clock."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest

from bot.blocks.ids import ActionId
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from tests.integration.reminder_steps import DM, at, audit_actions, buy, keys, move, texts
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, OUTSIDER, REQUESTER, BotUnderTest

H = timedelta(hours=1)
MIN = timedelta(minutes=1)
OTHER_PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/other"


def no_duplicates(bot: BotUnderTest) -> None:
    seen = Counter(keys(bot))
    assert all(n == 1 for n in seen.values()), seen


@pytest.mark.parametrize(
    "kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN, OptionKind.ON_DEMAND_RESERVATION]
)
def test_each_reminder_once_through_the_whole_life(make_bot, kind: OptionKind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, kind)
    bot.wait()
    assert texts(bot) == []  # bought days ahead: nothing due yet

    at(bot, res.start - 24 * H)
    at(bot, res.start - H)
    assert [t.split(",")[0] for t in texts(bot)] == [
        t.split(",")[0] for t in texts(bot)
    ]  # two messages so far
    first, second = texts(bot)
    assert "starts at" in first and "in 1 d" in first
    assert "starts at" in second and "in 1 h" in second

    # The clock alone does not say it started: tracking does.
    at(bot, res.start + MIN)
    assert len(texts(bot)) == 2
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    assert "is delivered" in texts(bot)[2]

    at(bot, res.end - 24 * H)
    at(bot, res.end - 2 * H)
    assert "in 1 d" in texts(bot)[3] and "in 2 h" in texts(bot)[4]
    at(bot, res.end - 40 * MIN)
    if kind is OptionKind.CAPACITY_BLOCK:
        assert "save your checkpoints now" in texts(bot)[5]
        assert len(texts(bot)) == 6
    else:
        assert len(texts(bot)) == 5

    move(bot, "R1", State.EXPIRED)
    at(bot, res.end + MIN)
    # Nothing was left behind: verified, resolved, cleaned up; no prompt needed.
    assert "cleaned up" in texts(bot)[-1]
    assert bot.record("R1").state is State.CLEANED_UP
    no_duplicates(bot)
    at(bot, res.end + 3 * MIN)  # the report card follows (tests/integration/test_utilisation.py)
    # Running the worker again much later sends nothing more.
    before = len(keys(bot))
    at(bot, res.end + 30 * 24 * H)
    assert len(keys(bot)) == before


def test_the_extend_button_shows_the_price_on_before_end_reminders(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    at(bot, res.end - 2 * H)
    at(bot, res.end - 2 * H + 1 * MIN)  # two due at once: paced a second apart
    posted = bot.fake.of("chat.postMessage")[-1]
    assert ActionId.EXTEND.value in posted.text_of_blocks()
    assert "Extend (" in posted.text_of_blocks() and "$" in posted.text_of_blocks()


def test_after_downtime_late_reminders_are_marked_and_senseless_ones_dropped(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    # Down until half an hour before the start: both before-start reminders still make
    # sense, and are sent marked late (one per run: posts to one person are paced).
    at(bot, res.start - 30 * MIN)
    at(bot, res.start - 29 * MIN)
    assert len(texts(bot)) == 2
    assert all("late: this reminder was due" in t for t in texts(bot))

    bot2 = make_bot()
    res2 = buy(bot2, OptionKind.CAPACITY_BLOCK, request_id="R2")
    # Down until after the start: "starts in 1 h" no longer makes sense: dropped, audited.
    at(bot2, res2.start + H)
    assert [t for t in texts(bot2) if "R2" in t] == []
    dropped = [e.detail for e in bot2.services.store.audit("R2") if e.action == "reminder-dropped"]
    assert sorted(dropped) == [
        "before-start: the reservation has started",
        "before-start: the reservation has started",
    ]


def test_reminders_are_dropped_when_the_purchase_fails(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    due = bot.services.store.redis.zcard(bot.services.store.key("due"))
    assert due >= 5  # 2 before start, 2 before end, the checkpoint
    move(bot, "R1", State.FAILED, failure="payment failed")
    assert bot.services.store.redis.zcard(bot.services.store.key("due")) == 0
    at(bot, res.end + 24 * H)
    assert texts(bot) == []


def test_an_extension_moves_the_end_reminders(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    at(bot, res.end - 24 * H)
    assert "in 1 d" in texts(bot)[-1]
    new_end = res.end + 48 * H
    moved = bot.record("R1").reservation
    assert moved is not None
    move(bot, "R1", State.ACTIVE, reservation=moved.model_copy(update={"end": new_end}))
    count = len(texts(bot))
    at(bot, res.end - 2 * H)  # the old 2 h reminder: moved away, nothing now
    at(bot, res.end - 40 * MIN)
    assert len(texts(bot)) == count
    at(bot, new_end - 24 * H)
    at(bot, new_end - 2 * H)
    at(bot, new_end - 40 * MIN)
    assert len(texts(bot)) == count + 3
    no_duplicates(bot)


# --- the cleanup prompt -------------------------------------------------------------------


def ended_with_leftovers(bot: BotUnderTest, kind: OptionKind = OptionKind.CAPACITY_BLOCK):  # type: ignore[no-untyped-def]
    res = buy(bot, kind)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    sandbox = bot.market.leftovers
    # Someone else's instance runs in the reservation, untagged; another request's runs
    # elsewhere; the request's own is tagged for it.
    sandbox.place_instance("us-east-1", "p5.48xlarge", reservation_id=res.id)
    sandbox.place_instance("us-east-1", "p5.48xlarge", tags={"gpu-bot:request-id": "R2"})
    sandbox.place_instance("us-east-1", "p5.48xlarge", tags={"gpu-bot:request-id": "R1"})
    bot.clock.set(res.end)
    move(bot, "R1", State.EXPIRED)
    bot.wait()
    return res


def instance_states(bot: BotUnderTest) -> dict[str, str]:
    found = bot.market.leftovers.describe_instances({}, "us-east-1")["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in found for i in r["Instances"]}


def _instance_ids(bot: BotUnderTest, wanted: str | None) -> list[str]:
    found = bot.market.leftovers.describe_instances({}, "us-east-1")["Reservations"]
    return [
        i["InstanceId"]
        for r in found
        for i in r["Instances"]
        if {t["Key"]: t["Value"] for t in i["Tags"]}.get("gpu-bot:request-id") == wanted
    ]


def tagged(bot: BotUnderTest, request_id: str) -> str:
    (instance,) = _instance_ids(bot, request_id)
    return instance


def untagged(bot: BotUnderTest) -> str:
    (instance,) = _instance_ids(bot, None)
    return instance


def prompt_actions(bot: BotUnderTest, channel: str = DM) -> list[str]:
    calls = [c for c in bot.fake.of("chat.postMessage") if c.args.get("channel") in (
        REQUESTER, channel)]  # fmt: skip
    return [e["action_id"] for b in calls[-1].blocks() for e in b.get("elements", [])]


def test_the_cleanup_prompt_lists_what_is_left_and_clean_up_now_is_verified(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    ended_with_leftovers(bot)
    prompt = bot.fake.of("chat.postMessage")[-1]
    ours, _, others = prompt.text_of_blocks().partition("Not ours, left alone")
    assert "still there" in ours
    assert ours.count("`i-") == 1 and tagged(bot, "R1") in ours
    assert others.count("`i-") == 1 and untagged(bot) in others  # listed, not priced
    assert tagged(bot, "R2") not in ours + others  # another request's: not even listed
    assert prompt_actions(bot) == [
        ActionId.CLEANUP_NOW.value,
        ActionId.CLEANUP_KEEP.value,
        ActionId.CLEANUP_NOT_MINE.value,
    ]
    # Someone else cannot answer for the requester.
    bot.click(ActionId.CLEANUP_NOW.value, "R1", OUTSIDER)
    bot.wait()
    assert bot.record("R1").cleanup is not None
    assert bot.record("R1").cleanup.status.value == "open"  # type: ignore[union-attr]

    bot.click(ActionId.CLEANUP_NOW.value, "R1", REQUESTER)
    bot.wait()
    # Deleted, but not resolved on the delete's word: the next look finds nothing.
    assert bot.record("R1").state is State.EXPIRED
    assert instance_states(bot) == {
        tagged(bot, "R1"): "shutting-down",
        tagged(bot, "R2"): "running",
        untagged(bot): "running",  # not ours: left alone, whatever reservation it is in
    }
    at(bot, bot.clock.now() + 2 * MIN)
    assert bot.record("R1").state is State.CLEANED_UP
    assert "cleaned up" in texts(bot)[-1]
    assert "cleaned-up" in audit_actions(bot)
    no_duplicates(bot)


def test_keep_for_a_day_asks_again_tomorrow(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = ended_with_leftovers(bot)
    bot.click(ActionId.CLEANUP_KEEP.value, "R1", REQUESTER)
    bot.wait()
    prompts = len(texts(bot))
    at(bot, res.end + 23 * H)
    assert len(texts(bot)) == prompts
    at(bot, res.end + 24 * H + MIN)
    assert len(texts(bot)) == prompts + 1
    assert "still there" in bot.fake.of("chat.postMessage")[-1].text_of_blocks()


def test_an_ignored_prompt_is_repeated_then_escalated_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = ended_with_leftovers(bot)
    for hours in (12, 24, 36, 48, 60):
        at(bot, res.end + hours * H + MIN)
    prompts = [t for t in texts(bot) if "has ended" in t]
    assert len(prompts) == 3
    escalations = texts(bot, APPROVAL_CHANNEL)
    assert len(escalations) == 1 and "nobody cleaned up" in escalations[0]
    # The approvers' Clean up now asks first, as the requester's does.
    posted = bot.fake.of("chat.postMessage")
    (handed,) = [c for c in posted if c.args["channel"] == APPROVAL_CHANNEL]
    (clean,) = [
        e
        for block in handed.blocks()
        for e in block.get("elements", [])
        if e.get("action_id") == ActionId.CLEANUP_NOW.value
    ]
    assert clean["confirm"]["title"]["text"] == "Delete all of it?"
    assert "cannot be undone" in clean["confirm"]["text"]["text"]
    # An approver cleans up from the escalation.
    bot.click(
        ActionId.CLEANUP_NOW.value,
        "R1",
        APPROVER,
    )
    bot.wait()
    at(bot, bot.clock.now() + 2 * MIN)
    assert bot.record("R1").state is State.CLEANED_UP
    no_duplicates(bot)


def test_not_mine_goes_to_the_approvers(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    ended_with_leftovers(bot)
    bot.click(ActionId.CLEANUP_NOT_MINE.value, "R1", REQUESTER)
    bot.wait()
    escalations = bot.fake.messages.get(APPROVAL_CHANNEL, [])
    assert len(escalations) == 1
    assert "says it is not theirs" in str(bot.fake.of("chat.postMessage")[-1].blocks())
    assert "cleanup-not-mine" in audit_actions(bot)
    # An approver cannot say "not mine" for the requester, and is told why, not that
    # only an approver may answer.
    _, token = bot.click(ActionId.CLEANUP_NOT_MINE.value, "R1", APPROVER)
    bot.wait()
    assert audit_actions(bot).count("cleanup-not-mine") == 1
    refusal = str(bot.responses(token)[-1]["text"])
    assert "Only the requester of R1 can say it is not theirs" in refusal, refusal
    assert "Clean up now or Keep for a day" in refusal and "or an approver" not in refusal
    # Handed to the approvers, it waits in their list until one of them decides.
    handed = [ActionId.CLEANUP_NOW.value, ActionId.CLEANUP_KEEP.value]
    assert _waiting_buttons(bot) == handed
    assert "Only approvers" in _waiting_reply(bot, REQUESTER)["text"]
    bot.click(ActionId.CLEANUP_KEEP.value, "R1", APPROVER)
    bot.wait()
    assert _waiting_buttons(bot) == []


def _waiting_reply(bot: BotUnderTest, user: str) -> dict[str, object]:
    _, token = bot.command("list waiting", user=user)
    bot.wait()
    return bot.responses(token)[-1]


def _waiting_buttons(bot: BotUnderTest) -> list[str]:
    blocks = _waiting_reply(bot, APPROVER)["blocks"]
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]  # type: ignore[attr-defined,index,union-attr]


def test_endpoints_left_on_an_expired_plan_are_listed_and_deleted(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.TRAINING_PLAN)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    ours = {"gpu-bot:request-id": "R1"}
    place = bot.market.leftovers.place_endpoint
    place("us-east-1", "chat-ep", res.id, "p5.48xlarge", 3, tags=ours)
    place("us-east-1", "other-ep", OTHER_PLAN, "p5.48xlarge", 1, tags=ours)
    # On the plan, but not the bot's: someone deployed it by hand, without the tag.
    place("us-east-1", "hand-ep", res.id, "p5.48xlarge", 1)
    bot.clock.set(res.end)
    move(bot, "R1", State.EXPIRED)
    bot.wait()
    blocks = bot.fake.of("chat.postMessage")[-1].text_of_blocks()
    mine, _, others = blocks.partition("Not ours, left alone")
    assert mine.count("inference component") == 3
    assert "`chat-ep`" in mine and "`chat-ep-config`" in mine and "other-ep" not in blocks
    assert "`hand-ep`" in others and "hand-ep" not in mine
    bot.click(ActionId.CLEANUP_NOW.value, "R1", REQUESTER)
    bot.wait()
    at(bot, bot.clock.now() + 2 * MIN)
    assert bot.record("R1").state is State.CLEANED_UP
    left = bot.market.leftovers.list_endpoints({}, "us-east-1")["Endpoints"]
    assert sorted(e["EndpointName"] for e in left) == ["hand-ep", "other-ep"]


def test_app_home_shows_live_reservations_with_time_left_and_the_next_reminder(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests import slack_payloads as payloads

    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    bot.wait()
    bot.clock.set(res.start - 30 * H)
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    home = json.dumps(bot.fake.of("views.publish")[-1].view())
    assert "Your reservations" in home and "starts in 1 d 6 h" in home
    assert "next reminder 2026-12-02 11:30 UTC (before the start)" in home
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    # A second early: the jump is a day of idleness unsampled, whose DM to the requester
    # comes a second after the rest (the harness moves the clock on to it).
    at(bot, res.end - H - timedelta(seconds=1))
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    home = json.dumps(bot.fake.of("views.publish")[-1].view())
    assert "ends in 1 h" in home and "(the checkpoint warning)" in home
    move(bot, "R1", State.EXPIRED)
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    assert "Your reservations" not in json.dumps(bot.fake.of("views.publish")[-1].view())


def test_an_instance_still_listed_in_an_ended_block_is_not_priced(make_bot) -> None:  # type: ignore[no-untyped-def]
    """AWS terminates a Capacity Block's instances 30 minutes before it ends: one it still
    lists as running after the end is going, paid with the block, not "still costing"."""
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    sandbox = bot.market.leftovers
    # Placed without the launch rules: as if DescribeInstances still said "running".
    sandbox.place_instance(
        "us-east-1", "p5.48xlarge", tags={"gpu-bot:request-id": "R1"}, reservation_id=res.id
    )
    bot.clock.set(res.end)
    move(bot, "R1", State.EXPIRED)
    bot.wait()
    prompt = bot.fake.of("chat.postMessage")[-1].text_of_blocks()
    assert tagged(bot, "R1") in prompt
    assert "in the ended Capacity Block: AWS terminates it" in prompt
    assert "Still costing" not in prompt and "/h" not in prompt
