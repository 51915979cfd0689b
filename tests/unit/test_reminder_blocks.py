"""Reminder, extension and cleanup messages: what they say, and that Slack accepts them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.blocks import reminders as b
from bot.blocks.ids import ActionId
from bot.domain import cleanup as c
from bot.domain.extension import Extension, ExtensionOffer, ExtensionStatus
from bot.domain.reminders import Reminder, ReminderKind

START = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)
END = START + timedelta(days=3)


@dataclass(frozen=True)
class Res:
    kind: str
    id: str
    region: str = "us-east-1"
    availability_zone: str | None = "us-east-1a"
    instance_type: str = "p5.48xlarge"
    instances: int = 2
    start: datetime = START
    end: datetime = END


CB = Res("capacity-block", "cr-0abc")
TP = Res("training-plan", "arn:aws:sagemaker:us-east-1:1:training-plan/gpu-bot-r1", None)


def valid(blocks: list[dict[str, Any]]) -> None:
    """slack_sdk's models enforce Block Kit's limits; parse and validate each block."""
    assert len(blocks) <= 50
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()


def actions(blocks: list[dict[str, Any]]) -> list[str]:
    found = []
    for block in blocks:
        for element in [*block.get("elements", []), block.get("accessory") or {}]:
            if "action_id" in element:
                found.append(element["action_id"])
    return found


@pytest.mark.parametrize("res", [CB, TP])
@pytest.mark.parametrize("kind", list(ReminderKind))
def test_every_reminder_renders_valid_blocks(res: Res, kind: ReminderKind) -> None:
    anchor = START if kind in (ReminderKind.BEFORE_START, ReminderKind.AT_START) else END
    reminder = Reminder("R7", kind, anchor, timedelta(hours=1))
    message = b.reminder_message("R7", reminder, res, anchor - timedelta(hours=1))
    valid(message.blocks)
    assert "R7" in message.text and "*" not in message.text


def test_before_start_says_how_to_use_it() -> None:
    reminder = Reminder("R7", ReminderKind.BEFORE_START, START, timedelta(hours=24))
    text = json.dumps(b.reminder_message("R7", reminder, CB, START - timedelta(hours=24)).blocks)
    assert "in 1 d" in text and "cr-0abc" in text and "us-east-1a" in text
    assert "MarketType=capacity-block" in text
    plan = json.dumps(b.reminder_message("R7", reminder, TP, START - timedelta(hours=24)).blocks)
    assert "MlReservationArn" in plan and TP.id in plan


def test_checkpoint_warning_and_late_marker() -> None:
    reminder = Reminder("R7", ReminderKind.CHECKPOINT, END, timedelta(minutes=40))
    message = b.reminder_message("R7", reminder, CB, END - timedelta(minutes=35), late=True)
    assert "save your checkpoints now" in message.text
    assert "late: this reminder was due 2026-12-17 10:50 UTC" in message.text


def test_extend_button_shows_the_price_only_before_the_end() -> None:
    offer = ExtensionOffer(
        offering_id="cbx-1", hours=48, start=END, end=END + timedelta(days=2), fee_usd=3322.37
    )
    before_end = Reminder("R7", ReminderKind.BEFORE_END, END, timedelta(hours=2))
    message = b.reminder_message("R7", before_end, CB, END - timedelta(hours=2), extension=offer)
    valid(message.blocks)
    assert actions(message.blocks) == [ActionId.EXTEND.value]
    assert "$3,322.37" in json.dumps(message.blocks)
    at_start = Reminder("R7", ReminderKind.AT_START, START)
    assert actions(b.reminder_message("R7", at_start, CB, START, extension=offer).blocks) == []


def test_extension_card_buttons_while_pending() -> None:
    offer = ExtensionOffer(offering_id="o", hours=24, start=END, end=END, fee_usd=10)
    ext = Extension(number=2, offer=offer, requested_by="U1", requested_at=START)
    card = b.extension_card("R7", "U1", ext)
    valid(card.blocks)
    assert actions(card.blocks) == [ActionId.EXTENSION_APPROVE, ActionId.EXTENSION_REJECT]
    rejected = ext.model_copy(
        update={"status": ExtensionStatus.REJECTED, "reason": "<!channel> no"}
    )
    decided = b.extension_card("R7", "U1", rejected)
    assert actions(decided.blocks) == []
    assert "&lt;!channel&gt;" in json.dumps(decided.blocks)


def test_cleanup_prompt_lists_what_is_left_with_three_buttons() -> None:
    now = END
    found = c.inventory(
        [
            c.Leftover(c.LeftoverKind.CAPACITY_RESERVATION, "cr-9", "us-east-1", 110.08),
            c.Leftover(c.LeftoverKind.ENDPOINT, "<@U0>ep", "us-east-1", None, "plan expired"),
            *(c.Leftover(c.LeftoverKind.INSTANCE, f"i-{n}", "us-east-1", 1.0) for n in range(40)),
        ],
        now,
    )
    message = b.cleanup_prompt("R7", found, repeat=2)
    valid(message.blocks)
    text = json.dumps(message.blocks)
    assert actions(message.blocks) == [
        ActionId.CLEANUP_NOW,
        ActionId.CLEANUP_KEEP,
        ActionId.CLEANUP_NOT_MINE,
    ]
    assert "$150.08/h" in text and "a day" in text and "billed until it is cancelled" in text
    assert "&lt;@U0&gt;ep" in text and "<@U0>" not in text
    assert "and 12 more" in text and "(reminder 2)" in text
    escalation = b.cleanup_escalation("R7", "U1", found, disowned_by="U1")
    valid(escalation.blocks)
    assert "says it is not theirs" in json.dumps(escalation.blocks)
    assert ActionId.CLEANUP_NOT_MINE not in actions(escalation.blocks)
    valid(b.cleanup_done("R7").blocks)


def _button(blocks: list[dict[str, Any]], action: ActionId) -> dict[str, Any]:
    (found,) = [
        e
        for block in blocks
        for e in [*block.get("elements", []), block.get("accessory") or {}]
        if e.get("action_id") == action.value
    ]
    return found


def test_every_button_that_deletes_or_spends_asks_first() -> None:
    from bot.blocks.waiting import waiting_item_blocks
    from bot.domain.lifecycle import State
    from tests.factories import make_record

    offer = ExtensionOffer(offering_id="o", hours=24, start=END, end=END, fee_usd=10)
    extend = _button([b.extend_offer_blocks("R7", offer)], ActionId.EXTEND)
    assert "$10.00" in extend["confirm"]["text"]["text"]
    found = c.Inventory(
        items=(c.Leftover(c.LeftoverKind.INSTANCE, "i-1", "us-east-1", 1.0),),
        checked_at=START,
    )
    handed = c.CleanupPrompt(escalated=True, status=c.PromptStatus.DISOWNED)
    record = make_record("R7", state=State.EXPIRED, cleanup=handed)
    for blocks in (
        b.cleanup_prompt("R7", found, repeat=1).blocks,
        b.cleanup_escalation("R7", "U1", found, disowned_by=None).blocks,
        waiting_item_blocks(record),
    ):
        valid(blocks)
        dialog = _button(blocks, ActionId.CLEANUP_NOW)["confirm"]
        assert dialog["title"]["text"] == "Delete all of it?" and dialog["style"] == "danger"
