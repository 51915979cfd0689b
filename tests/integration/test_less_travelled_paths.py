"""Paths a happy-path run never takes: the Cancel button, the approver group failing,
refusals at submit time, cancelling too late, Slack's response_url failing, a decision
that loses a race. Each goes through the real app over HTTP, on real Redis."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from tests.integration.test_slack_flow import quoted, submit_form, submitted
from tests.slack_harness import APPROVER, GROUP_APPROVER, OUTSIDER, REQUESTER, BotUnderTest


def _form_error(reply_body: str) -> str:
    answer = json.loads(reply_body)
    assert answer["response_action"] == "errors", answer
    return " ".join(answer["errors"].values())


def test_the_cancel_button_on_a_quote_cancels_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = quoted(bot)
    _, token = bot.click(ActionId.CANCEL.value, request_id, REQUESTER)
    bot.wait()
    (answer,) = bot.responses(token)
    assert answer["text"].startswith(f":wastebasket: Cancelled {request_id}")
    assert answer["replace_original"] is True
    assert bot.record(request_id).state is State.CANCELLED
    # Someone else's click on the same button changes nothing.
    other = quoted(bot)
    _, token = bot.click(ActionId.CANCEL.value, other, OUTSIDER)
    bot.wait()
    assert f"Only the requester can cancel {other}" in bot.responses(token)[0]["text"]
    assert bot.record(other).state is State.QUOTED


def test_an_approved_request_can_no_longer_be_cancelled(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = submitted(bot)
    bot.approve(request_id, APPROVER)
    bot.wait()
    state = bot.record(request_id).state
    assert state not in (State.PENDING_APPROVAL, State.CANCELLED)
    _, token = bot.command(f"cancel {request_id}")
    bot.wait()
    text = bot.responses(token)[0]["text"]
    assert f"Request {request_id} is {state.label}" in text
    assert bot.record(request_id).state is not State.CANCELLED


def test_a_cancelled_request_cannot_be_cancelled_again(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = quoted(bot)
    bot.command(f"cancel {request_id}")
    bot.wait()
    _, token = bot.command(f"cancel {request_id}")
    bot.wait()
    assert f"Request {request_id} is cancelled already." in bot.responses(token)[0]["text"]
    assert sum(e.action == "cancelled" for e in bot.services.store.audit(request_id)) == 1


def test_the_approver_group_failing_lets_nobody_in_through_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(approvers=[], approver_group="S0APPROVERS")
    request_id = submitted(bot)
    bot.fake.fail("usergroups.users.list", 500, times=100)
    _, token = bot.approve(request_id, GROUP_APPROVER)
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    (answer,) = bot.responses(token)
    assert answer["text"] == ":warning: Only approvers can decide GPU requests."


def test_the_approver_group_is_read_once_then_cached(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(approvers=[], approver_group="S0APPROVERS")
    directory_reads = lambda: len(bot.fake.of("usergroups.users.list"))  # noqa: E731
    first, second = submitted(bot), submitted(bot)
    bot.approve(first, GROUP_APPROVER)
    bot.wait()
    reads = directory_reads()
    assert reads >= 1
    bot.approve(second, GROUP_APPROVER)
    bot.wait()
    assert directory_reads() == reads  # the second decision used the cached members
    assert bot.record(first).state is not State.PENDING_APPROVAL
    assert bot.record(second).state is not State.PENDING_APPROVAL


@pytest.mark.parametrize(
    ("pick", "reason", "user", "expected"),
    [
        ("capacity-block:0", "   ", REQUESTER, "only with a reason for them: give one."),
        ("capacity-block:0", "x" * 3001, REQUESTER, "Keep the reason under"),
        ("capacity-block:0", "mine now", OUTSIDER, "is not yours to submit"),
        ("capacity-block:99", "load test", REQUESTER, "Pick one of the options offered."),
        ("no-such-kind:0", "load test", REQUESTER, "Pick one of the options offered."),
    ],
)
def test_each_submission_refusal_is_shown_on_the_form_and_changes_nothing(
    make_bot: Any, pick: str, reason: str, user: str, expected: str
) -> None:
    bot: BotUnderTest = make_bot()
    request_id = quoted(bot)
    before = bot.record(request_id)
    reply = submit_form(bot, request_id, pick, reason, user=user)
    assert expected in _form_error(reply.body)
    bot.wait()
    after = bot.record(request_id)
    assert (after.state, after.version) == (State.QUOTED, before.version)
    assert bot.fake.of("chat.postMessage") == []  # no card


def test_submitting_twice_is_refused_the_second_time(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = submitted(bot)
    reply = submit_form(bot, request_id)
    assert f"Request {request_id} is pending approval already." in _form_error(reply.body)
    bot.wait()
    cards = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] != REQUESTER]
    assert len(cards) == 1


def test_a_failing_response_url_falls_back_to_a_direct_message(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.fake.fail("response_url", 500, times=100)
    request_id = quoted_without_reading_the_response(bot)
    dms = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    assert dms, "the comparison was not delivered by DM either"
    assert request_id in json.dumps(dms[-1].args)
    assert "Recommended" in json.dumps(dms[-1].args.get("blocks"))


def quoted_without_reading_the_response(bot: BotUnderTest) -> str:
    bot.command("reserve 2x p5.48xlarge 3d from 2026-12-14 ec2")
    bot.wait()
    (record,) = bot.services.store.for_user(REQUESTER)
    assert record.state is State.QUOTED
    return record.id


def test_a_decision_that_loses_a_race_is_decided_again_on_a_fresh_read(make_bot) -> None:  # type: ignore[no-untyped-def]
    """A click reads the request, then someone else changes it before the click's
    compare-and-set: the click is decided again on the new version, not lost, not doubled."""
    bot: BotUnderTest = make_bot(second_approval_usd=1000)
    request_id = submitted(bot)
    store = bot.services.store
    real_get = store.get
    raced = []

    def get_then_race(rid: str) -> Any:
        record = real_get(rid)
        if not raced and record is not None and record.state is State.PENDING_APPROVAL:
            raced.append(True)
            # Another approver's click lands between this read and the write below.
            bot.services.approvals.approve(rid, bot.actor("U0APPROVER2"))
        return record

    store.get = get_then_race  # type: ignore[method-assign]
    try:
        bot.approve(request_id, APPROVER)
        bot.wait()
    finally:
        store.get = real_get  # type: ignore[method-assign]
    record = bot.record(request_id)
    assert raced
    assert sorted(record.approvers) == sorted([APPROVER, "U0APPROVER2"])
    assert record.state is not State.PENDING_APPROVAL
    assert sum(e.action == "approved" for e in store.audit(request_id)) == 1


def test_a_quote_that_fails_says_so_and_offers_nothing_to_submit(make_bot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.expect_crashes()  # the market fails on purpose; the failure is logged

    def down(*_: Any) -> Any:
        raise ConnectionError("the pricing endpoint did not answer")

    monkeypatch.setattr(bot.services.quotes, "quote", down)
    _, token = bot.command('reserve 2x p5.48xlarge 3d from 2026-12-14 ec2 reason="t"')
    bot.wait()
    (answer,) = bot.responses(token)
    assert answer["text"] == ":x: quoting failed: the pricing endpoint did not answer"
    assert not answer.get("blocks")  # no Submit, no Cancel
    (record,) = bot.services.store.for_user(REQUESTER)
    assert record.state is State.FAILED
    assert [e.action for e in bot.services.store.audit(record.id)] == ["created", "failed"]


def test_an_approval_card_deleted_before_the_decision(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = submitted(bot)
    card = bot.record(request_id).approval_message
    assert card is not None
    bot.fake.delete_message(card.channel, card.ts)  # someone in the channel deleted it
    bot.approve(request_id, APPROVER, container="home")
    bot.wait()
    record = bot.record(request_id)
    assert record.approvers == [APPROVER]
    assert record.state is not State.PENDING_APPROVAL  # decided, and handed to purchasing
    gone = [c for c in bot.fake.of("chat.update", ok_only=False) if c.args["ts"] == card.ts]
    assert gone and all(c.answer.get("error") == "message_not_found" for c in gone)
    told = [
        c
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == REQUESTER and "was approved" in c.args.get("text", "")
    ]
    assert len(told) == 1  # the requester still hears of it, once
    assert bot.purchase_calls() == 1
