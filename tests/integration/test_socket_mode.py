"""Socket Mode end to end: the bot's real entry point (bot.server.serve_socket_mode)
connects through the fake Web API's apps.connections.open to a local stand-in for
Slack's WebSocket endpoint, which sends envelopes and checks the acks."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs

import pytest

from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis
from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.lifecycle import State
from bot.front import UNAVAILABLE
from bot.server import serve_socket_mode
from tests import slack_payloads as payloads
from tests.conftest import start_redis_server
from tests.slack_fake import FakeSlack
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, REQUESTER, BotUnderTest
from tests.socket_mode_fake import FakeSocketMode

APP_TOKEN = "xapp-1-A0GPUBOT-1-test"
REQUEST = '2x p5.48xlarge 3d from 2026-12-14 ec2 util=90% reason="launch load test"'


@contextmanager
def connected(bot: BotUnderTest) -> Iterator[FakeSocketMode]:
    """The bot's app served over Socket Mode to a fake Slack, connected."""
    slack = FakeSocketMode()
    bot.fake.socket_url = slack.url
    stop = threading.Event()
    thread = threading.Thread(
        target=serve_socket_mode, args=(bot.app, APP_TOKEN, stop, 0.5), name="socket", daemon=True
    )
    thread.start()
    try:
        slack.wait_connections(1)
        yield slack
    finally:
        stop.set()
        thread.join(10)
        slack.close()


@pytest.fixture
def socket_bot(make_bot) -> Iterator[tuple[BotUnderTest, FakeSocketMode]]:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(slack_app_token=APP_TOKEN)
    with connected(bot) as slack:
        yield bot, slack


def _form(body: tuple[str, str]) -> dict[str, Any]:
    return {k: v[0] for k, v in parse_qs(body[0]).items()}


def _interactive(body: tuple[str, str]) -> dict[str, Any]:
    return dict(json.loads(_form(body)["payload"]))


def _ack_text(ack: dict[str, Any]) -> str:
    return json.dumps(ack.get("payload") or {})


def submit_form() -> tuple[str, str]:
    """The Submit form of R1: its handler reads the store before acking."""
    return payloads.view_submission(
        CallbackId.SUBMIT.value,
        {
            FormBlock.CHOICE.value: payloads.select("capacity-block:0"),
            FormBlock.REASON.value: payloads.text_input("launch load test"),
        },
        REQUESTER,
        json.dumps({"request": "R1", "response_url": "http://x/"}),
    )


def test_a_request_goes_from_command_to_approval_over_socket_mode(
    socket_bot: tuple[BotUnderTest, FakeSocketMode],
) -> None:
    bot, slack = socket_bot
    token, url = bot.new_response_url()
    envelope = slack.send(
        "slash_commands", _form(payloads.slash_command(f"reserve {REQUEST}", REQUESTER, url))
    )
    assert "Comparing options" in _ack_text(slack.wait_ack(envelope))
    bot.wait()
    (answer,) = [r for r in bot.responses(token) if r.get("blocks")]
    request_id = next(
        e["value"]
        for b in answer["blocks"]
        if b.get("type") == "actions"
        for e in b["elements"]
        if e["action_id"] == ActionId.SUBMIT_OPEN.value
    )

    # A button click: the form opens.
    _t, url = bot.new_response_url()
    click = payloads.button_click(ActionId.SUBMIT_OPEN.value, request_id, REQUESTER, url)
    slack.wait_ack(slack.send("interactive", _interactive(click)))
    bot.wait()
    assert len(bot.fake.of("views.open")) == 1

    # A view submission: the request goes to the approvers.
    _t, url = bot.new_response_url()
    form = payloads.view_submission(
        CallbackId.SUBMIT.value,
        {
            FormBlock.CHOICE.value: payloads.select("capacity-block:0"),
            FormBlock.REASON.value: payloads.text_input("launch load test"),
        },
        REQUESTER,
        json.dumps({"request": request_id, "response_url": url}),
    )
    slack.wait_ack(slack.send("interactive", _interactive(form)))
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]

    # Slack drops the connection; the client opens a new one and the approval arrives.
    slack.drop()
    slack.wait_connections(2)
    assert len(bot.fake.of("apps.connections.open")) == 2
    _t, url = bot.new_response_url()
    click = _interactive(payloads.button_click(ActionId.APPROVE.value, request_id, APPROVER, url))
    slack.wait_ack(slack.send("interactive", click))
    bot.wait()
    # The bot put the amount to the approver in a confirmation; the approver confirms it.
    meta = bot.fake.of("views.open")[-1].view()["private_metadata"]
    approve = _interactive(payloads.view_submission(CallbackId.APPROVE.value, {}, APPROVER, meta))
    first = slack.send("interactive", approve)
    slack.wait_ack(first)
    bot.wait()
    assert bot.record(request_id).state is State.PAYMENT_PENDING

    # Slack redelivers the same envelope (its ack was late): acked, nothing done twice.
    slack.acks.pop(first)
    slack.send("interactive", approve, retry_attempt=1, envelope_id=first)
    slack.wait_ack(first)
    bot.wait()
    record = bot.record(request_id)
    assert len(record.approvals) == 1
    assert sum(e.action == "approved" for e in bot.services.store.audit(request_id)) == 1
    assert bot.purchase_calls() == 1


@pytest.mark.alone
def test_with_redis_hanging_socket_mode_acks_within_slacks_limit(
    fake_slack: FakeSlack, clock: ManualClock, namespace: str
) -> None:
    """The HTTP front's 2.5 s budget holds over Socket Mode too: a form submission that
    reads the store before its ack is acked in time with the "could not reach its
    database" answer on the form, not left to Slack's 3 s timeout."""
    proc, url, _port, _dir = start_redis_server()
    bot = BotUnderTest(fake_slack, RedisStore(open_redis(url), namespace=namespace), clock)
    try:
        with connected(bot) as slack:
            proc.send_signal(signal.SIGSTOP)  # accepts connections, answers nothing
            try:
                started = time.monotonic()
                ack = slack.wait_ack(slack.send("interactive", _interactive(submit_form())))
                seconds = time.monotonic() - started
            finally:
                proc.send_signal(signal.SIGCONT)  # before the connection is closed
        assert seconds < 3.0, seconds
        assert ack["payload"]["response_action"] == "errors"
        (error,) = ack["payload"]["errors"].values()
        assert "could not reach its database" in error
        print(f"\nhung Redis over Socket Mode: the form acked in {seconds:.2f}s")
    finally:
        bot.close()
        proc.terminate()
        proc.wait(timeout=10)


def test_with_redis_down_socket_mode_acks_saying_to_try_again(
    fake_slack: FakeSlack, clock: ManualClock, namespace: str
) -> None:
    """A listener that finds the store down before its ack (connection refused, at once,
    well within the deadline) is not a 500 Slack would show as its own failure: its
    envelope is acked with the "could not reach its database, try again in a minute"
    answer, a form's on the form."""
    proc, url, _port, _dir = start_redis_server()
    bot = BotUnderTest(fake_slack, RedisStore(open_redis(url), namespace=namespace), clock)
    bot.expect_crashes()
    try:
        with connected(bot) as slack:
            proc.kill()
            proc.wait(timeout=10)
            ack = slack.wait_ack(slack.send("interactive", _interactive(submit_form())))
        (error,) = ack["payload"]["errors"].values()
        assert error == UNAVAILABLE[:150]  # Slack's limit on a block's error
    finally:
        bot.close()
        proc.kill()
        proc.wait(timeout=10)
