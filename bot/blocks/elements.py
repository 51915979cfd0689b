"""The Block Kit pieces every builder uses, each kept within Slack's limits (a section's
3,000 characters, a button's 75 and its value's 2,000): one place, so no builder forgets."""

from __future__ import annotations

import json
from typing import Any

from bot.blocks.ids import ELEMENT, ActionId, CallbackId, FormBlock
from bot.blocks.text import clip
from bot.blocks.values import ButtonValue

Block = dict[str, Any]
View = dict[str, Any]

SECTION_CHARS = 3000
BUTTON_CHARS = 75
VALUE_CHARS = 2000


def plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}]}


def button(text: str, action: ActionId, value: ButtonValue, style: str | None = None) -> Block:
    """A button carrying a typed value (read back with bot.blocks.values.decode)."""
    element: Block = {
        "type": "button",
        "text": plain(clip(text, BUTTON_CHARS)),
        "action_id": action.value,
        "value": str(value)[:VALUE_CHARS],
    }
    if style:
        element["style"] = style
    return element


def select_option(text: str, value: str) -> dict[str, Any]:
    return {"text": plain(clip(text, 75)), "value": value}


def input_block(
    block: FormBlock, label: str, element: Block, optional: bool = False, hint: str | None = None
) -> Block:
    out: Block = {
        "type": "input",
        "block_id": block.value,
        "label": plain(label),
        "element": {**element, "action_id": ELEMENT},
        "optional": optional,
    }
    if hint:
        out["hint"] = plain(hint)
    return out


def modal(
    callback: CallbackId, title: str, submit: str, blocks: list[Block], metadata: dict[str, str]
) -> View:
    return {
        "type": "modal",
        "callback_id": callback.value,
        "title": plain(title[:24]),
        "submit": plain(submit[:24]),
        "close": plain("Cancel"),
        # A request id and a response_url: far below Slack's 3000 characters (and a cut
        # JSON string would be worse than Slack refusing the view).
        "private_metadata": json.dumps(metadata),
        "blocks": blocks,
    }


def actions(block_id: str, *buttons: Block) -> Block:
    return {"type": "actions", "block_id": block_id, "elements": list(buttons)}


def confirmed(
    element: Block, title: str, text: str, yes: str, no: str = "Back", danger: bool = False
) -> Block:
    """The element with Slack's "Are you sure?" dialog (title 100 characters, text 300)."""
    dialog: Block = {
        "title": plain(clip(title, 100)),
        "text": {"type": "mrkdwn", "text": clip(text, 300)},
        "confirm": plain(clip(yes, 30)),
        "deny": plain(clip(no, 30)),
    }
    if danger:
        dialog["style"] = "danger"
    return {**element, "confirm": dialog}
