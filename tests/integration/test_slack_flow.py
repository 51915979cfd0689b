"""The whole Slack flow over HTTP: signed payloads into the running Bolt app, Slack's Web
API faked locally, Redis real. Each test reads what the bot sent to Slack and what it
stored."""

from __future__ import annotations

import json
from typing import Any

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from tests.races import ReadsBeforeWrites
from tests.slack_harness import (
    APPROVAL_CHANNEL,
    APPROVER,
    APPROVER_2,
    OUTSIDER,
    REQUESTER,
    BotUnderTest,
    Reply,
)
from tests.slack_payloads import select, text_input

REQUEST = '2x p5.48xlarge 3d from 2026-12-14 ec2 util=90% reason="launch load test"'


def action_ids(blocks: list[dict[str, Any]]) -> list[str]:
    return [e.get("action_id") for b in blocks if b.get("type") == "actions" for e in b["elements"]]


def quoted(bot: BotUnderTest, text: str = REQUEST, user: str = REQUESTER) -> str:
    """Run `/gpu reserve TEXT`; returns the new request id."""
    reply, token = bot.command(f"reserve {text}", user)
    assert reply.status == 200
    bot.wait()
    (response,) = [r for r in bot.responses(token) if r.get("blocks")]
    submit = [
        e
        for b in response["blocks"]
        if b.get("type") == "actions"
        for e in b["elements"]
        if e["action_id"] == ActionId.SUBMIT_OPEN.value
    ]
    return str(submit[0]["value"])


def submitted(
    bot: BotUnderTest,
    text: str = REQUEST,
    pick: str = "capacity-block:0",
    reason: str = "launch load test",
) -> str:
    request_id = quoted(bot, text)
    reply = submit_form(bot, request_id, pick, reason)
    assert reply.status == 200, reply.body
    assert reply.body == ""
    bot.wait()
    return request_id


def submit_form(
    bot: BotUnderTest,
    request_id: str,
    pick: str = "capacity-block:0",
    reason: str = "load test",
    user: str = REQUESTER,
) -> Reply:
    """Submit the "Submit for approval" modal, as the requester unless `user` says."""
    _token, response_url = bot.new_response_url()
    return bot.submit_view(
        CallbackId.SUBMIT.value,
        {FormBlock.CHOICE.value: select(pick), FormBlock.REASON.value: text_input(reason)},
        user,
        json.dumps({"request": request_id, "response_url": response_url}),
    )


def test_help_answers_in_the_ack(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _ = bot.command("help")
    assert reply.status == 200
    assert "/gpu reserve" in reply.body


def test_reserve_shows_the_comparison_with_the_recommendation(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, token = bot.command(f"reserve {REQUEST}")
    assert reply.status == 200
    assert "Comparing options for 2x p5.48xlarge" in reply.body
    bot.wait()
    (response,) = bot.responses(token)
    text = json.dumps(response["blocks"])
    assert "Recommended: Capacity Block" in text
    assert "$4,983.55" in text
    for label in ("On-Demand", "Spot", "Training plan", "On-Demand Capacity Reservation"):
        assert label in text
    assert action_ids(response["blocks"]) == [ActionId.SUBMIT_OPEN.value, ActionId.CANCEL.value]
    request_id = action_ids and response["blocks"][-1]["elements"][0]["value"]
    assert bot.record(request_id).state is State.QUOTED
    actions = [e.action for e in bot.services.store.audit(request_id)]
    assert actions == ["created", "quoted"]


def test_submit_opens_a_form_with_the_recommended_option_preselected(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = quoted(bot)
    reply, _ = bot.click(ActionId.SUBMIT_OPEN.value, request_id, REQUESTER)
    assert reply.status == 200
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    view = opened.view()
    assert view["callback_id"] == CallbackId.SUBMIT.value
    choice = next(b for b in view["blocks"] if b.get("block_id") == FormBlock.CHOICE.value)
    assert choice["element"]["initial_option"]["value"] == "capacity-block:0"
    reason = next(b for b in view["blocks"] if b.get("block_id") == FormBlock.REASON.value)
    assert reason["element"]["initial_value"] == "launch load test"


def test_submission_posts_the_request_for_approval(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    record = bot.record(request_id)
    assert record.state is State.PENDING_APPROVAL
    assert record.choice is not None and record.choice.total_usd == 4983.55
    (post,) = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    blocks = post.blocks()
    assert action_ids(blocks) == [ActionId.APPROVE.value, ActionId.REJECT_OPEN.value]
    # Approve puts the amount to an approver in a confirmation the bot opens (not Slack's
    # client-side confirm, which would come before the bot could refuse the requester).
    assert "confirm" not in blocks[-1]["elements"][0]
    form = bot.approval_form(request_id, APPROVER)
    assert form["callback_id"] == CallbackId.APPROVE.value
    assert "$4,983.55" in form["blocks"][0]["text"]["text"]
    assert form["submit"]["text"] == "Approve $4,983.55"
    assert f"<@{REQUESTER}>" in post.text_of_blocks()
    assert record.approval_message is not None
    assert record.approval_deadline is not None
    assert bot.services.store.due_at(f"timeout:{request_id}") == record.approval_deadline


def test_approval_updates_the_card_in_place_and_tells_the_requester(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    reply, _ = bot.approve(request_id, APPROVER)
    assert reply.status == 200
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING  # approved, then bought by the purchase job
    assert record.approvers == [APPROVER]
    updates = bot.fake.of("chat.update")
    assert updates and all(action_ids(u.blocks()) == [] for u in updates)  # decided: no buttons
    assert f"approved by <@{APPROVER}>" in updates[-1].text_of_blocks()
    assert "AWS: payment-pending" in updates[-1].text_of_blocks()
    dms = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    assert 1 <= len(dms) <= 2  # approved, and bought (one message when the purchase was first)
    assert "payment pending" in dms[-1].args["text"]
    assert bot.services.store.due_at(f"timeout:{request_id}") is None
    audit = bot.services.store.audit(request_id)
    assert [e.action for e in audit] == [
        "created",
        "quoted",
        "submitted",
        "posted",
        "approved",
        "purchasing",
        "sending",  # the attempt marked sent just before the purchase call
        "purchased",
    ]
    assert audit[4].actor == APPROVER
    assert audit[4].usd == 4983.55
    assert audit[-1].usd == 4983.55  # the fee AWS charged
    assert bot.purchase_calls() == 1


def test_the_requester_cannot_approve_their_own_request(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(approvers=[REQUESTER, APPROVER])
    request_id = submitted(bot)
    before = bot.services.store.audit(request_id)
    _, token = bot.approve(request_id, REQUESTER)
    bot.wait()
    assert bot.fake.of("views.open") == []  # refused before the amount is put to them
    (refusal,) = bot.responses(token)
    assert "your own request" in refusal["text"]
    assert refusal["response_type"] == "ephemeral"
    assert refusal["replace_original"] is False
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert bot.services.store.audit(request_id) == before
    assert bot.fake.of("chat.update") == []


def test_someone_who_is_not_an_approver_is_refused(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    _, token = bot.approve(request_id, OUTSIDER)
    bot.wait()
    (refusal,) = bot.responses(token)
    assert "Only approvers" in refusal["text"]
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert bot.fake.of("chat.update") == []


def test_members_of_the_approver_group_may_approve(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(approvers=[], approver_group="S0APPROVERS")
    request_id = submitted(bot)
    bot.approve(request_id, "U0GROUPAPPROVER")
    bot.wait()
    assert bot.record(request_id).approvers == ["U0GROUPAPPROVER"]
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    assert len(bot.fake.of("usergroups.users.list")) == 1


# --- money safety under concurrency ---------------------------------------------------


def _approvals_in_audit(bot: BotUnderTest, request_id: str) -> int:
    return sum(e.action == "approved" for e in bot.services.store.audit(request_id))


def test_twenty_concurrent_approve_clicks_make_one_transition(make_bot) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    bot = make_bot()
    request_id = submitted(bot)
    # Both approvers have the confirmation open; twenty confirmations arrive at once.
    forms = {who: bot.approval_form(request_id, who) for who in (APPROVER, APPROVER_2)}
    gate = ReadsBeforeWrites(request_id, readers=2)
    gate.install(bot.services.store)

    def confirm(i: int) -> Reply:
        who = APPROVER if i % 2 else APPROVER_2
        meta = forms[who]["private_metadata"]
        return bot.submit_view(CallbackId.APPROVE.value, {}, who, meta)

    with ThreadPoolExecutor(20) as pool:
        replies = list(pool.map(confirm, range(20)))
    assert all(r.status == 200 for r in replies)
    bot.wait()
    assert gate.held_writes >= 1  # the clicks really raced on one version
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING
    assert len(record.approvals) == 1
    assert _approvals_in_audit(bot, request_id) == 1
    assert bot.services.store.ids_in_state(State.PAYMENT_PENDING) == [request_id]
    assert len(record.attempts) == 1
    assert bot.purchase_calls() == 1  # counted by the sandbox market itself
    assert len(bot.fake.of("chat.update")) <= 2  # the approval, the purchase
    dms = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    assert len(dms) <= 2


def test_a_slack_retry_of_the_same_delivery_changes_nothing_twice(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests import slack_payloads as payloads

    bot = make_bot()
    request_id = submitted(bot)
    form = bot.approval_form(request_id, APPROVER)
    body = payloads.view_submission(
        CallbackId.APPROVE.value, {}, APPROVER, form["private_metadata"]
    )
    first = bot.post(*body)
    retry = bot.post(
        *body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )
    assert (first.status, retry.status) == (200, 200)
    bot.wait()
    assert _approvals_in_audit(bot, request_id) == 1
    assert len(bot.fake.of("chat.update")) <= 2  # the approval, the purchase
    assert bot.purchase_calls() == 1


def test_two_replicas_racing_make_one_transition(make_bot) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    one = make_bot()
    two = make_bot()  # same Redis namespace, own services, own HTTP server
    request_id = submitted(one)
    meta = one.approval_form(request_id, APPROVER)["private_metadata"]
    gate = ReadsBeforeWrites(request_id, readers=2)
    gate.install(one.services.store)
    gate.install(two.services.store)
    with ThreadPoolExecutor(10) as pool:
        list(
            pool.map(
                # Ten confirmations opened apart (each modal has its own view id, so
                # none is a replay of another) and sent at once to either replica.
                lambda i: (one if i % 2 else two).submit_view(
                    CallbackId.APPROVE.value, {}, APPROVER, meta, view_id=f"V0CONFIRM{i}"
                ),
                range(10),
            )
        )
    one.wait()
    two.wait()
    assert gate.held_writes >= 1  # the replicas really raced on one version
    assert _approvals_in_audit(one, request_id) == 1
    assert one.record(request_id).state is State.PAYMENT_PENDING
    # Each replica has its own worker and its own market client; the store is shared.
    assert one.purchase_calls() == two.purchase_calls() == 1


def test_above_the_second_approval_amount_two_different_approvers_are_needed(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(second_approval_usd=1000)
    request_id = submitted(bot)
    assert bot.record(request_id).required_approvals == 2
    _, token = bot.approve(request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert "needs one more approver" in bot.responses(token)[0]["text"]
    _, token = bot.approve(request_id, APPROVER)  # same person again
    bot.wait()
    assert "approved this already" in bot.responses(token)[0]["text"]
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert bot.purchase_calls() == 0
    bot.approve(request_id, APPROVER_2)
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING
    assert bot.purchase_calls() == 1
    assert record.approvers == [APPROVER, APPROVER_2]
    assert _approvals_in_audit(bot, request_id) == 1
    assert [e.action for e in bot.services.store.audit(request_id)].count("approval") == 1


def test_a_quote_above_the_hard_limit_offers_no_submit_and_says_why(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(max_request_usd=1000)
    _reply, token = bot.command(f"reserve {REQUEST}")
    bot.wait()
    (response,) = [r for r in bot.responses(token) if r.get("blocks")]
    assert action_ids(response["blocks"]) == [ActionId.CANCEL.value]
    shown = json.dumps(response["blocks"])
    assert "above the $1,000.00 limit for one request" in shown
    assert "$4,983.55" in shown  # the cheapest option's most


def test_above_the_hard_limit_the_request_is_refused_before_it_is_posted(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(max_request_usd=1000)
    bot.command(f"reserve {REQUEST}")  # a submit form opened from an older quote
    bot.wait()
    (record,) = bot.services.store.for_user(REQUESTER)
    request_id = record.id
    answer = json.loads(submit_form(bot, request_id).body)
    assert answer["response_action"] == "errors"
    assert "$4,983.55" in answer["errors"][FormBlock.CHOICE.value]
    assert "$1,000.00 limit" in answer["errors"][FormBlock.CHOICE.value]
    bot.wait()
    assert bot.record(request_id).state is State.QUOTED
    assert [
        c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL
    ] == []


def test_only_the_requester_can_submit(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = quoted(bot)
    reply = submit_form(bot, request_id, reason="mine now", user=OUTSIDER)
    assert "not yours" in json.loads(reply.body)["errors"][FormBlock.CHOICE.value]
    assert bot.record(request_id).state is State.QUOTED


# --- reject, cancel, time out ---------------------------------------------------------


def test_reject_asks_for_a_reason_and_records_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    bot.click(ActionId.REJECT_OPEN.value, request_id, APPROVER)
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    view = opened.view()
    assert view["callback_id"] == CallbackId.REJECT.value
    empty = bot.submit_view(
        CallbackId.REJECT.value,
        {FormBlock.REJECT_REASON.value: text_input("   ")},
        APPROVER,
        view["private_metadata"],
    )
    assert json.loads(empty.body)["response_action"] == "errors"
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    done = bot.submit_view(
        CallbackId.REJECT.value,
        {FormBlock.REJECT_REASON.value: text_input("use the Q1 budget")},
        APPROVER,
        view["private_metadata"],
    )
    assert done.status == 200
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.REJECTED
    assert record.rejection is not None and record.rejection.reason == "use the Q1 budget"
    (update,) = bot.fake.of("chat.update")
    assert action_ids(update.blocks()) == []
    assert "use the Q1 budget" in update.text_of_blocks()
    dm = [c for c in bot.fake.of("chat.postMessage") if "rejected" in c.args.get("text", "")]
    assert len(dm) == 1 and dm[0].args["channel"] == REQUESTER


def test_the_requester_cannot_reject_either(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(approvers=[REQUESTER, APPROVER])
    request_id = submitted(bot)
    _, token = bot.click(ActionId.REJECT_OPEN.value, request_id, REQUESTER)
    bot.wait()
    assert bot.fake.of("views.open") == [] or all(
        c.view().get("callback_id") != CallbackId.REJECT.value for c in bot.fake.of("views.open")
    )
    assert "your own request" in bot.responses(token)[0]["text"]
    # Nor by submitting the reject form directly (a form opened by an approver, or forged):
    bot.click(ActionId.REJECT_OPEN.value, request_id, APPROVER)
    bot.wait()
    (opened,) = [
        c for c in bot.fake.of("views.open") if c.view()["callback_id"] == CallbackId.REJECT.value
    ]
    reply = bot.submit_view(
        CallbackId.REJECT.value,
        {FormBlock.REJECT_REASON.value: text_input("I changed my mind")},
        REQUESTER,
        opened.view()["private_metadata"],
    )
    bot.wait()
    assert reply.status == 200
    told = [c.args for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    assert any("your own request" in m.get("text", "") for m in told)
    record = bot.record(request_id)
    assert record.state is State.PENDING_APPROVAL
    assert record.rejection is None


def test_cancel_by_command_updates_the_card(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    _, token = bot.command(f"cancel {request_id}", OUTSIDER)
    bot.wait()
    assert "Only the requester" in bot.responses(token)[0]["text"]
    _, token = bot.command(f"cancel {request_id.lower()}")
    bot.wait()
    assert "Cancelled" in bot.responses(token)[0]["text"]
    assert bot.record(request_id).state is State.CANCELLED
    (update,) = bot.fake.of("chat.update")
    assert action_ids(update.blocks()) == []
    assert bot.services.store.due_at(f"timeout:{request_id}") is None
    _, token = bot.approve(request_id, APPROVER)  # too late
    bot.wait()
    assert "cancelled already" in bot.responses(token)[0]["text"]
    assert bot.record(request_id).state is State.CANCELLED


def test_a_pending_request_times_out(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from bot.worker import LEASE, Worker

    bot = make_bot(approval_timeout=timedelta(hours=6))
    request_id = submitted(bot)
    worker = Worker(bot.services)
    bot.clock.advance(timedelta(hours=5, minutes=59))
    assert worker.run_once() == 0
    bot.clock.advance(timedelta(minutes=2))
    # The timeout, the notify job it scheduled, and the two that one fans out to: the
    # card and the requester.
    assert worker.run_once() == 4
    record = bot.record(request_id)
    assert record.state is State.TIMED_OUT
    (update,) = bot.fake.of("chat.update")
    assert action_ids(update.blocks()) == []
    assert any("timed out" in c.args.get("text", "") for c in bot.fake.of("chat.postMessage"))
    bot.clock.advance(LEASE + timedelta(minutes=1))
    assert worker.run_once() == 0  # acked: not run again, even after its lease


def test_the_deadline_is_never_after_the_offering_starts(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    bot = make_bot(approval_timeout=timedelta(days=30))
    request_id = submitted(bot)
    record = bot.record(request_id)
    offering = record.chosen_offering
    assert offering is not None and record.approval_deadline == offering.start


def test_an_on_demand_deadline_is_never_after_its_window_starts(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    bot = make_bot(approval_timeout=timedelta(days=30))
    request_id = submitted(bot, "1x g5.12xlarge 1d from 2026-12-14 ec2", pick="on-demand:0")
    record = bot.record(request_id)
    assert record.chosen_offering is None and record.request.start > bot.clock.now()
    assert record.approval_deadline == record.request.start
    assert bot.services.store.due_at(f"timeout:{request_id}") == record.request.start
    bot.clock.set(record.request.start + timedelta(minutes=1))
    bot.wait()
    assert bot.record(request_id).state is State.TIMED_OUT
    bot.approve(request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is State.TIMED_OUT


# --- Slack down: people are told later, and only what is true now -----------------------


def test_a_card_that_cannot_be_posted_is_posted_when_slack_is_back(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    bot = make_bot()
    request_id = quoted(bot)
    bot.fake.fail("chat.postMessage", 500)  # not posted; the bot cannot know that
    submit_form(bot, request_id)
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert bot.record(request_id).approval_message is None
    bot.clock.advance(timedelta(seconds=31))  # the card job's retry, once the post settled
    bot.wait()
    assert bot.fake.of("conversations.history")  # looked for it before posting again
    cards = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    assert len(cards) == 1
    assert action_ids(cards[0].blocks()) == [ActionId.APPROVE.value, ActionId.REJECT_OPEN.value]
    assert bot.record(request_id).approval_message is not None


def test_a_request_decided_before_its_card_is_posted_gets_a_card_without_buttons(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    from datetime import timedelta

    bot = make_bot()
    request_id = quoted(bot)
    bot.fake.fail("chat.postMessage", 500)
    submit_form(bot, request_id)
    bot.wait()
    bot.approve(request_id, APPROVER, container="home")
    bot.wait()
    bot.clock.advance(timedelta(seconds=31))
    bot.wait()
    cards = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    assert len(cards) == 1
    assert action_ids(cards[0].blocks()) == []
    assert "approved by" in cards[0].text_of_blocks()
    dms = [c for c in bot.fake.of("chat.postMessage") if "was approved" in c.args.get("text", "")]
    assert len(dms) == 1


def test_the_requester_is_told_once_even_when_the_delivery_runs_again(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    bot.approve(request_id, APPROVER)
    bot.wait()
    dms_before = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    updates_before = len(bot.fake.of("chat.update"))
    bot.services.notifications.deliver(request_id)  # a second run of the same job
    bot.wait()
    dms = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    assert dms == dms_before
    assert len(bot.fake.of("chat.update")) == updates_before + 1  # the card is rendered again


def test_a_job_that_keeps_failing_is_buried_not_retried_forever(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from bot.services.notifications import CARD

    retries = CARD.retries
    bot = make_bot()
    bot.expect_crashes()  # Slack fails on purpose
    request_id = quoted(bot)
    bot.fake.fail("chat.postMessage", 500, times=10_000)
    submit_form(bot, request_id)
    bot.wait()
    for attempt in range(1, retries.attempts):
        bot.clock.advance(retries.wait(attempt) + timedelta(seconds=1))
        bot.wait()
    dead = bot.services.store.dead_jobs()
    assert f"card:{request_id}" in dead
    assert "500" in dead[f"card:{request_id}"]["error"]
    # Each run but the first looked for the card before posting it again.
    assert len(bot.fake.of("conversations.history")) == retries.attempts - 1
    bot.clock.advance(timedelta(hours=6))  # still before the approval deadline
    before = len(bot.fake.calls)
    bot.wait()
    assert len(bot.fake.calls) == before  # nothing more is tried


def test_on_demand_from_today_can_be_submitted(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    bot = make_bot(approval_timeout=timedelta(hours=4))
    request_id = submitted(bot, "1x g5.12xlarge 2d from today ec2", pick="on-demand:0")
    record = bot.record(request_id)
    assert record.state is State.PENDING_APPROVAL
    assert record.approval_deadline == bot.clock.now() + timedelta(hours=4)


def test_the_cap_is_checked_against_the_whole_window_not_the_utilisation_estimate(make_bot) -> None:  # type: ignore[no-untyped-def]
    # At util=1% On-Demand looks like ~$25; run for the whole window it costs ~$2,500.
    bot = make_bot(max_request_usd=1000)
    request_id = quoted(bot, '1x p5.48xlarge 1d from 2026-12-14 ec2 util=1% reason="t"')
    record = bot.record(request_id)
    assert record.quote is not None
    on_demand = record.quote.option(OptionKind.ON_DEMAND)
    assert on_demand is not None and on_demand.total_usd is not None
    assert on_demand.total_usd < 1000 < (on_demand.most_usd or 0)
    answer = json.loads(submit_form(bot, request_id, pick="on-demand:0").body)
    assert answer["response_action"] == "errors"
    assert "$1,000.00 limit" in answer["errors"][FormBlock.CHOICE.value]
    bot.wait()
    assert bot.record(request_id).state is State.QUOTED


def test_two_approvers_by_the_most_it_can_cost_and_the_card_shows_both_figures(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(second_approval_usd=1000)
    text = '1x p5.48xlarge 1d from 2026-12-14 ec2 util=1% reason="t"'
    request_id = submitted(bot, text, pick="on-demand:0")
    record = bot.record(request_id)
    assert record.required_approvals == 2
    assert record.total_usd is not None and record.most_usd is not None
    (card,) = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    shown = json.dumps(card.args["blocks"])
    assert f"${record.total_usd:,.2f} expected at 1% use" in shown
    assert f"up to *${record.most_usd:,.2f}*" in shown


def test_a_request_whose_window_has_passed_cannot_be_approved(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    bot = make_bot(approval_timeout=timedelta(hours=24))
    request_id = submitted(bot, "1x g5.12xlarge 1h from today ec2", pick="on-demand:0")
    record = bot.record(request_id)
    # On-Demand has no offering to start, but the asked window still ends.
    assert record.approval_deadline == record.request.end
    bot.clock.advance(timedelta(hours=3))
    reply, _ = bot.approve(request_id, APPROVER)
    assert reply.status == 200
    bot.wait()
    assert bot.record(request_id).state is not State.APPROVED
    assert bot.purchase_calls() == 0


def test_an_older_request_past_its_window_is_refused_whatever_its_deadline(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from bot.domain.approval import approve
    from bot.domain.decisions import Outcome

    bot = make_bot(approval_timeout=timedelta(hours=24))
    request_id = submitted(bot, "1x g5.12xlarge 1h from today ec2", pick="on-demand:0")
    # A record submitted before the deadline was capped at the window's end.
    record = bot.record(request_id).model_copy(
        update={"approval_deadline": bot.clock.now() + timedelta(hours=24)}
    )
    later = bot.clock.now() + timedelta(hours=3)
    assert approve(record, APPROVER, True, later).outcome is Outcome.TOO_LATE
