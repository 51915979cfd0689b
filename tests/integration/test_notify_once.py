"""Approval cards and decision DMs are posted once, through a slow, rate-limited or
refusing Slack: each recipient's message is its own job, a late answer is resolved by
looking in the conversation, a 429 gives the job back instead of sleeping in it, and a
card Slack refuses for good is reported while the requester is still told."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

import pytest

from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from bot.services.notifications import card_key
from bot.worker import Worker
from tests.integration.test_slack_flow import action_ids, quoted, submit_form, submitted
from tests.slack_harness import (
    APPROVAL_CHANNEL,
    APPROVER,
    APPROVER_2,
    OUTSIDER,
    REQUESTER,
    BotUnderTest,
)


def cards(bot: BotUnderTest) -> list[dict[str, object]]:
    """Messages in the approval channel (each post that took effect, duplicates kept)."""
    return list(bot.fake.messages.get(APPROVAL_CHANNEL, []))


def dms(bot: BotUnderTest) -> list[str]:
    return [str(m["text"]) for m in bot.fake.messages.get("D" + REQUESTER[1:], [])]


def test_a_card_answered_after_the_timeout_is_found_not_posted_again_and_later_updated(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    bot = make_bot(slack_timeout=timedelta(seconds=1))
    request_id = quoted(bot)
    bot.fake.slow("chat.postMessage", 2.5)  # Slack posts the card; the answer comes late
    submit_form(bot, request_id)
    bot.wait()
    assert len(cards(bot)) == 1
    assert bot.record(request_id).approval_message is None  # the bot does not know yet
    bot.approve(request_id, APPROVER, container="home")
    bot.wait()
    assert len(cards(bot)) == 1  # a run before the post settled did not post again
    bot.clock.advance(timedelta(seconds=31))
    bot.wait()
    (card,) = cards(bot)
    assert bot.fake.of("conversations.history")
    message = bot.record(request_id).approval_message
    assert message is not None and message.ts == card["ts"]
    updates = [c for c in bot.fake.of("chat.update") if c.args["ts"] == card["ts"]]
    assert updates and action_ids(updates[-1].blocks()) == []  # decided: no live buttons
    assert sum("was approved" in t for t in dms(bot)) == 1


def test_a_long_retry_after_does_not_hold_up_another_users_quote(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = quoted(bot)
    bot.fake.fail("chat.postMessage", 429, times=1, retry_after=120)
    # One worker thread runs everyone's jobs, as a small deployment does.
    worker = Worker(bot.services, concurrency=1, batch=4)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run_forever, args=(stop, 0.05), daemon=True)
    thread.start()
    try:
        submit_form(bot, request_id)
        deadline = time.monotonic() + 10
        while not bot.fake.of("chat.postMessage", ok_only=False) and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        reply, token = bot.command("quote 1x p5.48xlarge 1d from 2026-12-14", OUTSIDER)
        assert reply.status == 200
        while not bot.responses(token) and time.monotonic() - started < 15:
            time.sleep(0.05)
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(30)
    assert bot.responses(token), "the other user's quote never came"
    assert took < 10
    posts = bot.fake.of("chat.postMessage", ok_only=False)
    assert [c.status for c in posts] == [429]  # given back for Retry-After, not retried
    assert bot.record(request_id).approval_message is None
    bot.clock.advance(timedelta(seconds=120))
    bot.wait()
    assert len(cards(bot)) == 1
    assert bot.record(request_id).approval_message is not None


def test_a_card_refused_in_an_archived_channel_is_reported_and_the_requester_told(
    make_bot,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = make_bot()
    request_id = quoted(bot)
    bot.fake.refuse("chat.postMessage", "is_archived")
    with caplog.at_level(logging.ERROR, logger="bot"):
        submit_form(bot, request_id)
        bot.wait()
    assert cards(bot) == []
    assert any(
        "could not be posted" in r.getMessage() and "is_archived" in r.getMessage()
        for r in caplog.records
    )
    (told,) = dms(bot)
    assert request_id in told and "is_archived" in told and "Home tab" in told
    actions = [e.action for e in bot.services.store.audit(request_id)]
    assert "card-refused" in actions
    # Not retried: the same post would be refused again.
    bot.clock.advance(timedelta(hours=1))
    bot.wait()
    assert len(bot.fake.of("chat.postMessage", ok_only=False)) == 2  # the card, the DM
    assert bot.services.store.dead_jobs() == {}
    # An approver decides from App Home; the requester hears of it.
    bot.approve(request_id, APPROVER, container="home")
    bot.wait()
    assert any("was approved" in t for t in dms(bot))


def test_a_card_that_cannot_be_updated_does_not_hold_up_telling_the_requester(
    make_bot,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = make_bot()
    request_id = submitted(bot)
    bot.fake.refuse("chat.update", "is_archived", times=100)  # the channel was archived
    with caplog.at_level(logging.ERROR, logger="bot"):
        bot.approve(request_id, APPROVER)
        bot.wait()
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    told = dms(bot)
    assert sum("was approved" in t for t in told) == 1
    assert any("payment pending" in t for t in told)
    assert any("cannot be updated" in r.getMessage() for r in caplog.records)
    assert bot.services.store.dead_jobs() == {}
    assert len(cards(bot)) == 1


def test_each_decision_is_told_once_however_often_its_jobs_run(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    bot.approve(request_id, APPROVER)
    bot.wait()
    before = dms(bot)
    for _ in range(3):
        bot.services.notifications.deliver(request_id)
        bot.wait()
    assert dms(bot) == before
    assert bot.fake.delivery_keys().count(card_key(request_id)) == 1


def test_a_copy_of_the_card_the_bot_lost_track_of_loses_its_buttons_when_clicked(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    bot = make_bot()
    request_id = submitted(bot)
    card = bot.record(request_id).approval_message
    assert card is not None
    # A second copy, as a post whose answer was lost and whose search missed it leaves.
    stray = "1699999999.000100"
    bot.click(ActionId.REJECT_OPEN.value, request_id, APPROVER, message_ts=stray)
    bot.approve(request_id, APPROVER, message_ts=stray)
    bot.wait()
    assert bot.record(request_id).state is State.PAYMENT_PENDING  # the click still counts
    on_stray = [c for c in bot.fake.of("chat.update") if c.args["ts"] == stray]
    assert on_stray and all(action_ids(c.blocks()) == [] for c in on_stray)
    assert "lost track" in on_stray[-1].text_of_blocks()
    on_card = [c for c in bot.fake.of("chat.update") if c.args["ts"] == card.ts]
    assert on_card and "lost track" not in on_card[-1].text_of_blocks()
    # Clicks on the recorded card leave it to the card job.
    before = len(bot.fake.of("chat.update"))
    bot.approve(request_id, APPROVER)
    bot.wait()
    assert len(bot.fake.of("chat.update")) == before


def test_the_requester_hears_approved_even_when_the_purchase_moved_on_first(make_bot) -> None:  # type: ignore[no-untyped-def]
    """With two approvers the last approval schedules the purchase and the notify job at
    the same moment; a purchase that runs first moves the request to payment pending
    before the notify job reads it. The requester still hears "approved" (with both
    approvers), and then "payment pending", once each."""
    bot = make_bot(second_approval_usd=1000)
    request_id = submitted(bot)
    bot.approve(request_id, APPROVER)
    bot.wait()
    bot.approve(request_id, APPROVER_2)
    assert bot.services.after_ack.wait_idle(20)
    assert bot.record(request_id).state is State.APPROVED
    bot.services.purchases.run_purchase(request_id)  # before any other due job
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    bot.wait()
    approved = [t for t in dms(bot) if "was approved by" in t]
    assert len(approved) == 1 and APPROVER in approved[0] and APPROVER_2 in approved[0]
    assert sum("payment" in t.lower() for t in dms(bot)) == 1
