"""Signatures, escaping, Web API faults, forms, and the read-only commands."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from bot.adapters.slack.inbound import MAX_AGE_SECONDS
from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.lifecycle import State
from tests import slack_payloads as payloads
from tests.integration.test_slack_flow import (
    REQUEST,
    action_ids,
    quoted,
    submit_form,
    submitted,
)
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, REQUESTER, SECRET, BotUnderTest
from tests.slack_payloads import select, text_input


def _keys(bot: BotUnderTest) -> list[str]:
    """The store's keys, less the signatures the HTTP front and the intake remember
    against replays."""
    store = bot.services.store
    remembered = (store.key("seen", ""), store.key("once", ""))
    return sorted(
        k for k in store.redis.scan_iter(match=store.prefix + "*") if not k.startswith(remembered)
    )


# --- signatures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signed", "secret", "age"),
    [
        (False, "test-signing-secret", 0),
        (True, "wrong-secret", 0),
        (True, "test-signing-secret", 301),
        (True, "test-signing-secret", -301),  # dated five minutes ahead
    ],
    ids=["missing", "bad", "stale", "future"],
)
def test_bad_signatures_get_401_and_change_nothing(make_bot, signed, secret, age) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.fake.reset()  # forget auth.test at start-up
    before = _keys(bot)
    _, url = bot.new_response_url()
    body = payloads.slash_command(f"reserve {REQUEST}", REQUESTER, url)
    reply = bot.post(*body, signed=signed, secret=secret, timestamp=int(time.time()) - age)
    assert reply.status == 401
    bot.wait()
    assert _keys(bot) == before
    assert bot.fake.calls == []


def test_the_front_remembers_a_signature_for_as_long_as_it_verifies(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    token, url = bot.new_response_url()
    # Not answered in its ack: it reads the store, so the front drops a replay of it.
    body, ctype = payloads.slash_command("status R1", REQUESTER, url)
    headers = payloads.sign(SECRET, body)
    first = bot.post(body, ctype, signed=False, headers=headers)
    replayed = bot.post(body, ctype, signed=False, headers=headers)
    bot.wait()
    assert first.status == replayed.status == 200 and replayed.body == ""
    assert len(bot.responses(token)) == 1
    store = bot.services.store
    (remembered,) = store.redis.scan_iter(match=store.key("seen", "sig:*"))
    # A signature verifies while its timestamp is within MAX_AGE_SECONDS of the clock,
    # either side: seen first up to that long before its timestamp, it can be replayed
    # until that long after. Forgotten any sooner, a replay would go through.
    assert store.redis.pttl(remembered) > 2 * MAX_AGE_SECONDS * 1000


def test_a_signed_body_that_was_tampered_with_gets_401(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    _, url = bot.new_response_url()
    card = bot.record(request_id).approval_message
    assert card is not None
    body, ctype = payloads.button_click(
        ActionId.APPROVE.value, request_id, "U0SOMEONE", url, message_ts=card.ts
    )
    headers = payloads.sign("test-signing-secret", body)
    forged = body.replace("U0SOMEONE", APPROVER)
    reply = bot.post(forged, ctype, signed=False, headers=headers)
    assert reply.status == 401
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL


# --- escaping -------------------------------------------------------------------------

NASTY = "<!channel> ping <@U0BOSS> & <https://evil.example|click here> <!subteam^S1>"


def test_user_text_is_escaped_everywhere_it_is_shown(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    text = f'2x p5.48xlarge 3d from 2026-12-14 ec2 reason="{NASTY}"'
    _reply, token = bot.command(f"reserve {text}")
    bot.wait()
    quote_blocks = json.dumps(bot.responses(token)[0]["blocks"])
    request_id = json.loads(quote_blocks)[-1]["elements"][0]["value"]
    assert bot.record(request_id).request.reason == NASTY  # stored as typed
    submit_form(bot, request_id, reason=NASTY)
    bot.wait()
    bot.click(ActionId.REJECT_OPEN.value, request_id, APPROVER)
    bot.wait()
    meta = bot.fake.of("views.open")[-1].view()["private_metadata"]
    bot.submit_view(
        CallbackId.REJECT.value, {FormBlock.REJECT_REASON.value: text_input(NASTY)}, APPROVER, meta
    )
    bot.wait()
    _, status_token = bot.command(f"status {request_id}")
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    assert bot.responses(status_token)  # the status, with its history, is among what is shown
    shown = [quote_blocks] + [
        json.dumps(c.args)
        for c in bot.fake.calls
        if c.method
        in ("chat.postMessage", "chat.update", "response_url", "views.open", "views.publish")
    ]
    for text_sent in shown:
        for raw in ("<!channel>", "<@U0BOSS>", "<https://evil.example", "<!subteam"):
            assert raw not in text_sent
    assert any("&lt;!channel&gt;" in t for t in shown)
    assert any("&amp;" in t for t in shown)


# --- Web API faults -------------------------------------------------------------------


def test_429_is_retried_after_retry_after_and_the_card_is_posted_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = quoted(bot)
    bot.fake.fail("chat.postMessage", 429, times=1, retry_after=30)
    started = time.monotonic()
    submit_form(bot, request_id)  # its "Submitted" reply goes to a response_url, not by DM
    bot.wait()
    assert time.monotonic() - started < 10  # the job was given back, not slept in

    def attempts() -> list[int]:
        posts = bot.fake.of("chat.postMessage", ok_only=False)
        return [c.status for c in posts if c.args.get("channel") == APPROVAL_CHANNEL]

    assert attempts() == [429]
    bot.clock.advance(timedelta(seconds=25))
    bot.wait()
    assert attempts() == [429]  # Retry-After honoured
    bot.clock.advance(timedelta(seconds=5))
    bot.wait()
    assert attempts() == [429, 200]
    assert not bot.fake.of("conversations.history")  # a 429 posted nothing: no need to look
    assert bot.record(request_id).approval_message is not None


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_is_retried(make_bot, status: int) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    bot.fake.fail("chat.update", status, times=1)
    bot.approve(request_id, APPROVER)
    bot.wait()
    bot.clock.advance(timedelta(seconds=31))  # the card job's backoff
    bot.wait()
    statuses = [c.status for c in bot.fake.of("chat.update", ok_only=False)]
    assert statuses[0] == status and statuses[-1] == 200
    assert set(statuses[1:]) == {200}
    card = bot.fake.of("chat.update")[-1]
    assert action_ids(card.blocks()) == []
    assert bot.record(request_id).state is State.PAYMENT_PENDING


def test_slack_down_after_approval_keeps_the_state(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.expect_crashes()  # Slack fails on purpose
    request_id = submitted(bot)
    bot.fake.fail("chat.update", 500, times=10)
    bot.approve(request_id, APPROVER)
    bot.wait()
    # The card is stale, not the state: approved, and bought exactly once.
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    assert bot.purchase_calls() == 1


# --- the reserve form ------------------------------------------------------------------


def test_missing_pieces_open_a_prefilled_form(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _ = bot.command("reserve ml.p5.48xlarge inference")
    assert reply.status == 200
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    view = opened.view()
    assert view["callback_id"] == CallbackId.RESERVE_FORM.value
    blocks = {b.get("block_id"): b for b in view["blocks"]}
    assert blocks["instance_type"]["element"]["initial_option"]["value"] == "p5.48xlarge"
    assert blocks["environment"]["element"]["initial_option"]["value"] == "sagemaker"
    assert blocks["workload"]["element"]["initial_option"]["value"] == "inference"
    assert "still needed: count, duration, start" in json.dumps(view["blocks"])


def test_the_form_validates_fields_inline_and_changes_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    before = _keys(bot)
    values = {
        "count": {"type": "number_input", "value": "2"},
        "instance_type": select("p5.48xlarge"),
        "duration": text_input("3 fortnights"),
        "start_date": {"type": "datepicker", "selected_date": "2020-01-01"},
        "region": text_input("us-east-1"),
        "environment": select("ec2"),
        "workload": select("training"),
        "utilization": {"type": "number_input", "value": "80"},
    }
    reply = bot.submit_view(CallbackId.RESERVE_FORM.value, values, REQUESTER)
    answer = json.loads(reply.body)
    assert answer["response_action"] == "errors"
    assert "3 fortnights" in answer["errors"]["duration"]
    assert "36h, 3d, 2w" in answer["errors"]["duration"]
    assert "in the past" in answer["errors"]["start_date"]
    assert set(answer["errors"]) == {"duration", "start_date"}
    bot.wait()
    assert _keys(bot) == before


def test_a_valid_form_gets_the_comparison(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    token, url = bot.new_response_url()
    values = {
        "count": {"type": "number_input", "value": "2"},
        "instance_type": select("p5.48xlarge"),
        "duration": text_input("3d"),
        "start_date": {"type": "datepicker", "selected_date": "2026-12-14"},
        "start_time": {"type": "timepicker", "selected_time": "09:00"},
        "region": text_input("us-east-1"),
        "environment": select("ec2"),
        "workload": select("training"),
        "utilization": {"type": "number_input", "value": "90"},
        "reason": text_input("load test"),
    }
    reply = bot.submit_view(
        CallbackId.RESERVE_FORM.value, values, REQUESTER, json.dumps({"response_url": url})
    )
    assert (reply.status, reply.body) == (200, "")
    bot.wait()
    responses = bot.responses(token)
    assert "Recommended: Capacity Block" in json.dumps(responses[-1]["blocks"])
    request_id = (
        action_ids(responses[-1]["blocks"]) and responses[-1]["blocks"][-1]["elements"][0]["value"]
    )
    record = bot.record(request_id)
    assert record.request.start.hour == 9
    assert record.request.utilization_pct == 90


# --- read-only commands and bad input ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("frobnicate", 'Unknown subcommand "frobnicate"'),
        ("reserve 2x p5.48xlarg 3d from 2026-12-14", 'unknown instance type "p5.48xlarg"'),
        ("reserve 2x p5.48xlarge 3d from 2026-12-14 colour=blue", "unknown setting"),
        ("quote p5.48xlarge", "Missing count, duration, start"),
        ("cancel", "Which request?"),
        ("reserve <!channel>", "&lt;!channel&gt;"),
    ],
)
def test_bad_input_gets_a_clear_message_and_changes_nothing(make_bot, text, expected) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    before = _keys(bot)
    reply, _ = bot.command(text)
    assert reply.status == 200
    assert expected in reply.body
    bot.wait()
    assert _keys(bot) == before
    assert "<!channel>" not in reply.body


def test_quote_only_compares_and_stores_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    before = _keys(bot)
    _, token = bot.command("quote 2x p5.48xlarge 3d from 2026-12-14 util=40% ec2")
    bot.wait()
    blocks = bot.responses(token)[0]["blocks"]
    assert "Recommended: On-Demand" in json.dumps(blocks)
    assert action_ids(blocks) == []
    # Only cached prices, the workers' wake-up signal and the capacity outlook's counts of
    # what the searches saw remain: no request, no job.
    left = [
        k
        for k in _keys(bot)
        if ":price:" not in k and not k.endswith(":wake") and ":outlook:" not in k
    ]
    assert left == list(before)


def test_status_and_list(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    _, token = bot.command(f"status {request_id}")
    bot.wait()
    text = json.dumps(bot.responses(token)[0]["blocks"])
    assert "Pending approval" in text
    assert "submitted by" in text  # history from the audit trail
    _, token = bot.command("status")  # my latest
    bot.wait()
    assert request_id in json.dumps(bot.responses(token)[0]["blocks"])
    _, token = bot.command("list")
    bot.wait()
    assert request_id in json.dumps(bot.responses(token)[0]["blocks"])
    _, token = bot.command("list", APPROVER)
    bot.wait()
    listing = json.dumps(bot.responses(token)[0]["blocks"])
    assert "Waiting for approval" in listing and request_id in listing
    _, token = bot.command("status R999")
    bot.wait()
    assert "can't find request R999" in bot.responses(token)[0]["text"]


# --- App Home --------------------------------------------------------------------------


def test_home_shows_requests_and_approvers_get_buttons(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    bot.post(
        *payloads.event(
            {"type": "app_home_opened", "user": REQUESTER, "tab": "home", "channel": "D1"}
        )
    )
    bot.post(
        *payloads.event(
            {"type": "app_home_opened", "user": APPROVER, "tab": "home", "channel": "D2"}
        )
    )
    bot.wait()
    views = {c.args["user_id"]: c.view() for c in bot.fake.of("views.publish")}
    assert request_id in json.dumps(views[REQUESTER]["blocks"])
    assert action_ids(views[REQUESTER]["blocks"]) == []
    assert action_ids(views[APPROVER]["blocks"]) == [
        ActionId.APPROVE.value,
        ActionId.REJECT_OPEN.value,
    ]
    bot.fake.reset()
    bot.approve(request_id, APPROVER, container="home")
    bot.wait()
    assert bot.record(request_id).approvers == [APPROVER]
    (republished,) = bot.fake.of("views.publish")
    assert action_ids(republished.view()["blocks"]) == []


def test_mig_check_answers_in_the_ack(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _ = bot.command("mig check p4d.24xlarge 4g.20gb 2g.10gb 1g.5gb")
    body = json.loads(reply.body)
    text = json.dumps(body["blocks"])
    assert "3 partitions per GPU, 24 per endpoint" in text
    assert "AcceleratorPartitionLayouts" in text
    reply, _ = bot.command("mig check p4d.24xlarge 3g.20gb 3g.20gb 1g.5gb")
    assert "does not work" in json.dumps(json.loads(reply.body)["blocks"])
    reply, _ = bot.command("mig check p4d.24xlarge 9g.99gb")
    assert "9g.99gb" in reply.body and "Usage" in reply.body


def test_mig_without_profiles_or_with_plan_gets_the_right_answer(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, _ = bot.command("mig check p4d.24xlarge")
    assert reply.body.startswith("Usage: `/gpu mig check INSTANCE PROFILE")
    assert "does not work" not in reply.body
    reply, _ = bot.command("mig plan p4d.24xlarge llama=18gbx8 embed=4gbx8")
    shown = json.dumps(json.loads(reply.body)["blocks"])
    assert "per GPU on p4d.24xlarge" in shown
    assert "llama (18 GB): 8 on ml-mig-" in shown or "llama (18 GB): 8 on mig-" in shown
    assert "chargeback by compute slices held" in shown
    assert "AcceleratorPartitionLayouts" in shown
    reply, _ = bot.command("mig plan p4d.24xlarge llama=90gb")
    assert "No MIG layout fits" in json.dumps(json.loads(reply.body)["blocks"])
    reply, _ = bot.command("mig plan p4d.24xlarge llama")
    assert "Usage: `/gpu mig check" in reply.body and "`/gpu mig plan INSTANCE" in reply.body


def test_a_response_url_post_is_retried(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.fake.fail("response_url", 500, times=1)
    _, token = bot.command(f"reserve {REQUEST}")
    bot.wait()
    answers = [c for c in bot.fake.of("response_url", ok_only=False) if c.token == token]
    assert [c.status for c in answers] == [500, 200]
    assert "Recommended" in json.dumps(answers[-1].args["blocks"])


def test_a_failure_after_the_ack_is_reported_not_left_hanging(make_bot) -> None:  # type: ignore[no-untyped-def]
    import redis

    bot = make_bot()

    def redis_down(*_args: object) -> None:
        raise redis.ConnectionError("Connection refused")

    # The request is stored after the ack (by the intake): that write fails.
    store = bot.services.store
    store._lua = redis_down  # type: ignore[method-assign]
    reply, token = bot.command(f"reserve {REQUEST}")
    assert "Comparing options" in reply.body
    bot.services.after_ack.wait_idle(10)
    del store._lua
    assert store.for_user(REQUESTER) == []
    (sorry,) = bot.responses(token)
    assert "did not go through" in sorry["text"]
    assert sorry["response_type"] == "ephemeral"


def test_mig_check_and_plan_read_repeats_with_one_grammar(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    # `xN` after a profile repeats it, attached or as the next word; `xN` after a model
    # gives its copies, the same way.
    for layout in ("1g.5gbx7", "1g.5gb x7", "mig-1g.5gb x7"):
        reply, _ = bot.command(f"mig check p4d.24xlarge {layout}")
        text = json.dumps(json.loads(reply.body)["blocks"])
        assert "7 partitions per GPU, 56 per endpoint" in text, (layout, reply.body)
    for models in ("llama=4gbx7", "llama=4gb x7"):
        reply, _ = bot.command(f"mig plan p4d.24xlarge {models}")
        assert "llama (4 GB): 7 on" in json.dumps(json.loads(reply.body)["blocks"]), models
    reply, _ = bot.command("mig check p4d.24xlarge x7")
    assert '"x7" repeats nothing' in reply.body and "Usage" in reply.body
