"""On-Demand and Spot: nothing is bought, yet the requester is reminded before the end of
the requested window (start + duration) at each GPU_BOT_REMIND_BEFORE_EXPIRY lead time,
and after it is asked to clean up what still runs tagged for the request. No checkpoint
warning and no Extend button (AWS extends neither); Spot says it can be interrupted.
Real Redis, the whole flow through Slack, the sandbox market and the controllable clock."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest

from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from tests.integration.reminder_steps import DM, audit_actions
from tests.integration.test_purchasing import BLOCK, approve
from tests.integration.test_reminders_after_extension import walk
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import REQUESTER, BotUnderTest

H = timedelta(hours=1)
MIN = timedelta(minutes=1)
SPOT_OK = '2x p5.48xlarge 3d from 2026-12-14 ec2 interruptible reason="load test"'
KINDS = [pytest.param("on-demand:0", id="on-demand"), pytest.param("spot:0", id="spot")]


def scheduled(bot: BotUnderTest, pick: str) -> CapacityRecord:
    request_id = submitted(bot, SPOT_OK if pick.startswith("spot") else BLOCK, pick=pick)
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.SCHEDULED and record.reservation is None
    return record


def to_requester(bot: BotUnderTest) -> list[tuple[str, str]]:
    """(delivery key, text and blocks) of each message posted to the requester."""
    out = []
    for call in bot.fake.of("chat.postMessage"):
        if call.args["channel"] not in (REQUESTER, DM):
            continue
        meta = call.args.get("metadata") or {}
        if isinstance(meta, str):
            meta = json.loads(meta)
        key = str((meta.get("event_payload") or {}).get("key", ""))
        out.append((key, f"{call.args.get('text', '')}\n{call.text_of_blocks()}"))
    return out


def reminder_texts(bot: BotUnderTest) -> list[str]:
    return [t for k, t in to_requester(bot) if ":before-end:" in k or ":checkpoint:" in k]


@pytest.mark.parametrize("pick", KINDS)
def test_before_end_reminders_at_each_lead_then_the_cleanup_prompt(make_bot, pick: str) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    record = scheduled(bot, pick)
    start, end = record.request.start, record.request.end
    walk(bot, start - 2 * H, step=6 * H)
    walk(bot, start + 10 * MIN)
    assert bot.record(record.id).state is State.ACTIVE
    assert reminder_texts(bot) == []
    # Something still runs, tagged for the request, when the window ends.
    bot.market.leftovers.place_instance(
        "us-east-1", "p5.48xlarge", tags={"gpu-bot:request-id": record.id}
    )
    walk(bot, end - 25 * H, step=6 * H)
    walk(bot, end + 10 * MIN)
    texts = reminder_texts(bot)
    assert len(texts) == 2, texts
    assert "ends at" in texts[0] and "in 1 d" in texts[0]
    assert "in 2 h" in texts[1]
    for text in texts:
        assert "late:" not in text
        assert ActionId.EXTEND.value not in text and "save your checkpoints now" not in text
        assert "ask for a new request" in text
        assert ("can be interrupted" in text) is (pick == "spot:0")
    posted = Counter(k for k, _ in to_requester(bot))
    assert all(n == 1 for n in posted.values()), posted
    # After the end: one cleanup prompt listing the instance (not also "is now expired").
    prompts = [t for _, t in to_requester(bot) if "has ended" in t]
    assert len(prompts) == 1 and "`i-" in prompts[0]
    assert not any("is now expired" in t for _, t in to_requester(bot))
    bot.click(ActionId.CLEANUP_NOW.value, record.id, REQUESTER)
    bot.wait()
    walk(bot, bot.clock.now() + 10 * MIN)
    assert bot.record(record.id).state is State.CLEANED_UP
    assert "cleaned up" in to_requester(bot)[-1][1]


@pytest.mark.parametrize("pick", KINDS)
def test_nothing_left_after_the_window_says_cleaned_up_once(make_bot, pick: str) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    record = scheduled(bot, pick)
    walk(bot, record.request.end - 25 * H, step=6 * H)
    walk(bot, record.request.end + 10 * MIN)
    assert bot.record(record.id).state is State.CLEANED_UP
    ended = [t for _, t in to_requester(bot)]
    assert sum("cleaned up" in t for t in ended) == 1
    assert not any("is now expired" in t or "has ended" in t for t in ended)


@pytest.mark.parametrize("pick", KINDS)
def test_cancelling_before_the_window_drops_its_reminders(make_bot, pick: str) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    record = scheduled(bot, pick)
    due = bot.services.store.redis.zrange(bot.services.store.key("due"), 0, -1)
    assert sum(":before-end:" in str(j) for j in due) == 2
    reply, _ = bot.command(f"cancel {record.id}")
    assert reply.status == 200
    bot.wait()
    assert bot.record(record.id).state is State.CANCELLED
    due = bot.services.store.redis.zrange(bot.services.store.key("due"), 0, -1)
    assert not any(":before-end:" in str(j) for j in due)
    walk(bot, record.request.end - 25 * H, step=6 * H)
    walk(bot, record.request.end + 2 * H)
    assert reminder_texts(bot) == []
    assert "cleaned-up" not in audit_actions(bot, record.id)


@pytest.mark.parametrize("pick", KINDS)
def test_app_home_shows_the_window_with_time_left_and_the_next_reminder(
    make_bot, pick: str
) -> None:  # type: ignore[no-untyped-def]
    from tests import slack_payloads as payloads

    bot = make_bot()
    record = scheduled(bot, pick)
    start, end = record.request.start, record.request.end

    def home() -> str:
        bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
        bot.wait()
        return json.dumps(bot.fake.of("views.publish")[-1].view())

    label = "(On-Demand)" if pick.startswith("on-demand") else "(Spot)"
    bot.clock.set(start - 2 * H)
    shown = home()
    assert "Your reservations" in shown and f"2x p5.48xlarge {label}" in shown
    assert "starts in 2 h" in shown and "(before the end)" in shown
    bot.clock.set(end - 3 * H)
    assert "ends in 3 h" in home()
    bot.clock.set(end + MIN)
    assert "Your reservations" not in home()


@pytest.mark.parametrize("pick", KINDS)
def test_the_approval_says_how_to_launch_tagged_so_the_cleanup_finds_it(
    make_bot, pick: str
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    record = scheduled(bot, pick)
    approved = next(t for k, t in to_requester(bot) if k.startswith("told:") and ":approved:" in k)
    assert "handed to purchasing" not in approved
    assert "Nothing is bought for" in approved and "start when the window opens" in approved
    assert "--count 2" in approved and "--instance-type p5.48xlarge" in approved
    assert (
        "--tag-specifications 'ResourceType=instance,Tags=[{Key=gpu-bot:request-id,"
        f"Value={record.id}}}]'"
    ) in approved
    assert ("MarketType=spot" in approved) is pick.startswith("spot")
    # At the window's start the "is active" message says it again.
    bot.clock.set(record.request.start + MIN)
    bot.wait()
    active = next(t for k, t in to_requester(bot) if ":active:" in k)
    assert f"Value={record.id}" in active and "window is open until" in active
