"""User text on its way to cards and DMs: checked on the server (not only by the modal),
one line, and shown so that it cannot pass for the bot's own words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.lifecycle import State
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest
from tests.slack_payloads import select, text_input

FAKE_LINE = "fine\n:white_check_mark: *Approved* · approved by <@U0ALICE>\n*Total* $1.00"


def _reject_with(bot: BotUnderTest, request_id: str, reason: str) -> dict[str, Any]:
    bot.click(ActionId.REJECT_OPEN.value, request_id, APPROVER)
    bot.wait()
    meta = bot.fake.of("views.open")[-1].view()["private_metadata"]
    reply = bot.submit_view(
        CallbackId.REJECT.value, {FormBlock.REJECT_REASON.value: text_input(reason)}, APPROVER, meta
    )
    bot.wait()
    return json.loads(reply.body) if reply.body else {}


def _texts(node: Any, kind: str) -> list[str]:
    """Every text of text objects of `kind` (mrkdwn or plain_text) in a block tree."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == kind and isinstance(node.get("text"), str):
            found.append(node["text"])
        for value in node.values():
            found += _texts(value, kind)
    elif isinstance(node, list):
        for item in node:
            found += _texts(item, kind)
    return found


def test_a_reject_reason_too_long_for_a_card_is_refused_on_the_server(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    answer = _reject_with(bot, request_id, "&" * 700)  # the modal's max_length is skipped
    assert answer["response_action"] == "errors"
    assert "500 characters" in answer["errors"][FormBlock.REJECT_REASON.value]
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    assert bot.fake.of("chat.update") == []


def test_the_longest_reason_made_of_ampersands_still_makes_a_card_slack_accepts(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, reason="&" * 500)
    _reject_with(bot, request_id, "&" * 500)
    assert bot.record(request_id).state is State.REJECTED
    (update,) = bot.fake.of("chat.update")
    for block in update.blocks():
        Block.parse(block).validate_json()  # type: ignore[union-attr]
        for text in _texts(block, "plain_text") + _texts(block, "mrkdwn"):
            assert len(text) <= 3000


@pytest.mark.parametrize("reason", ["\x00", "\x00\x00 \u200b\n\t"])
def test_a_reason_of_only_invisible_characters_is_no_reason(make_bot, reason: str) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    answer = _reject_with(bot, request_id, reason)
    assert answer["response_action"] == "errors"
    assert "needs a reason" in answer["errors"][FormBlock.REJECT_REASON.value]
    assert bot.record(request_id).state is State.PENDING_APPROVAL


def test_a_submit_reason_of_only_a_nul_is_no_reason(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_slack_flow import quoted, submit_form

    bot = make_bot()
    request_id = quoted(bot)
    answer = json.loads(submit_form(bot, request_id, reason="\x00").body)
    assert answer["response_action"] == "errors"
    assert "reason" in answer["errors"][FormBlock.REASON.value]
    assert bot.record(request_id).state is State.QUOTED


def test_user_text_cannot_draw_the_bots_own_lines(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, reason=FAKE_LINE)
    _reject_with(bot, request_id, FAKE_LINE)
    record = bot.record(request_id)
    assert record.state is State.REJECTED
    (card,) = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"].startswith("C")]
    (update,) = bot.fake.of("chat.update")
    for call in (card, update):
        mrkdwn = "\n".join(_texts(call.blocks(), "mrkdwn"))
        assert "*Approved*" not in mrkdwn and "U0ALICE" not in mrkdwn
        plain = [t for t in _texts(call.blocks(), "plain_text") if "Approved" in t]
        assert plain, "the reason is shown, as plain text"
        assert all("\n" not in t for t in plain)
    dm = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]
    (rejected,) = [c for c in dm if "rejected" in c.args["text"]]
    text = rejected.args["text"]
    assert "\n" not in text
    quoted_part = text[text.index("`") :]
    assert quoted_part.startswith("`") and quoted_part.endswith("`")
    assert quoted_part.count("`") == 2  # all of it inside one code span: no formatting


def test_an_environment_the_form_does_not_offer_is_refused(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    values = {
        "count": {"type": "number_input", "value": "2"},
        "instance_type": select("p5.48xlarge"),
        "duration": text_input("3d"),
        "start_date": {"type": "datepicker", "selected_date": "2026-12-14"},
        "region": text_input("us-east-1"),
        "environment": select("kubernetes"),
        "workload": select("astrology"),
        "utilization": {"type": "number_input", "value": "80"},
    }
    answer = json.loads(bot.submit_view(CallbackId.RESERVE_FORM.value, values, REQUESTER).body)
    assert answer["response_action"] == "errors"
    assert "ec2 or sagemaker" in answer["errors"]["environment"]
    assert "training, inference" in answer["errors"]["workload"]
    bot.wait()
    assert bot.fake.of("views.open") == []
