"""What Slack refuses in a message or a view, checked the way Slack checks it: slack_sdk's
Block Kit models (which know each element's limits) plus the documented rules they let
through (empty text, field length, empty element lists, keys Slack does not know, repeated
block ids). The local Web API answers `invalid_blocks` when any is broken, so nothing
passes there that Slack would refuse.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
TEXT_LIMIT = 3000  # any text object (section text is documented at 3000)
FIELD_LIMIT = 2000
ELEMENTS = {"actions": 25, "context": 10}
TEXT_TYPES = ("plain_text", "mrkdwn")
PLAIN_KEYS = frozenset({"label", "placeholder", "hint", "title", "submit", "close"})


def message_problems(text: Any, blocks: Any) -> list[str]:
    """Why Slack would refuse a message with this `text` and these `blocks` ([]: none)."""
    if blocks in (None, ""):
        blocks = []
    if not isinstance(blocks, list):
        return ["blocks must be a list"]
    problems: list[str] = []
    if not blocks and not (isinstance(text, str) and text.strip()):
        problems.append("no_text: a message needs text or blocks")
    if len(blocks) > MESSAGE_BLOCKS:
        problems.append(f"{len(blocks)} blocks: a message holds at most {MESSAGE_BLOCKS}")
    return problems + _blocks_problems(blocks)


def view_problems(view: Any) -> list[str]:
    """Why Slack would refuse this view (a modal or the Home tab)."""
    if not isinstance(view, dict):
        return ["view must be an object"]
    blocks = view.get("blocks") or []
    if not isinstance(blocks, list):
        return ["blocks must be a list"]
    problems: list[str] = []
    if view.get("type") not in ("modal", "home"):
        problems.append(f"view type {view.get('type')!r} is not modal or home")
    if len(blocks) > VIEW_BLOCKS:
        problems.append(f"{len(blocks)} blocks: a view holds at most {VIEW_BLOCKS}")
    try:
        # The blocks are checked below, one by one: a stand-in keeps their count out of it.
        fields = {k: v for k, v in view.items() if k != "blocks"}
        View(**fields, blocks=[{"type": "divider"}]).validate_json()
    except (SlackObjectFormationError, TypeError, ValueError) as exc:
        problems.append(f"view: {exc}")
    for key in ("title", "submit", "close"):
        if key in view:
            problems += _text_problems(view[key], key)
    return problems + _blocks_problems(blocks)


def _blocks_problems(blocks: list[Any]) -> list[str]:
    problems: list[str] = []
    seen_ids: set[str] = set()
    for n, raw in enumerate(blocks):
        where = f"blocks[{n}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}: not an object")
            continue
        block_id = raw.get("block_id")
        if block_id is not None:
            if block_id in seen_ids:
                problems.append(f"{where}: block_id {block_id!r} is used twice")
            seen_ids.add(str(block_id))
        problems += [f"{where}: {p}" for p in _block_problems(raw)]
    return problems


def _block_problems(raw: dict[str, Any]) -> list[str]:
    block = Block.parse(raw)
    if block is None or type(block) is Block:
        return [f"unknown block type {raw.get('type')!r}"]
    problems: list[str] = []
    try:
        shaped = block.to_dict()  # validates the block and every element in it
    except (SlackObjectFormationError, TypeError, ValueError) as exc:
        problems.append(str(exc))
        shaped = None
    if shaped is not None:
        problems += [f"{path} is not something Slack knows" for path in _dropped(raw, shaped)]
    kind = raw.get("type")
    for field in raw.get("fields") or []:
        if isinstance(field, dict) and len(str(field.get("text", ""))) > FIELD_LIMIT:
            problems.append(f"a field is over {FIELD_LIMIT} characters")
    if kind in ELEMENTS:
        elements = raw.get("elements") or []
        if not elements:
            problems.append(f"{kind} block without elements")
        elif len(elements) > ELEMENTS[kind]:
            problems.append(
                f"{kind} block with {len(elements)} elements (at most {ELEMENTS[kind]})"
            )
    if kind == "header":
        problems += _plain_only(raw.get("text"), "header text")
    return problems + _text_problems(raw, str(kind)) + _plain_keys(raw, str(kind))


def _plain_only(value: Any, where: str) -> list[str]:
    if isinstance(value, dict) and value.get("type") != "plain_text":
        return [f"{where} must be plain_text, not {value.get('type')!r}"]
    return []


def _plain_keys(value: Any, where: str) -> list[str]:
    """Button text, labels, placeholders, hints and titles take plain_text only."""
    problems: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in PLAIN_KEYS or (key == "text" and value.get("type") == "button"):
                problems += _plain_only(inner, f"{where}.{key}")
            problems += _plain_keys(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            problems += _plain_keys(inner, f"{where}[{n}]")
    return problems


def _text_problems(value: Any, where: str) -> list[str]:
    """Every text object under `value`: not empty, not over the limit."""
    problems: list[str] = []
    if isinstance(value, dict):
        if value.get("type") in TEXT_TYPES and "text" in value:
            text = value["text"]
            if not isinstance(text, str) or not text.strip():
                problems.append(f"{where}: empty text")
            elif len(text) > TEXT_LIMIT:
                problems.append(f"{where}: text of {len(text)} characters (at most {TEXT_LIMIT})")
        for key, inner in value.items():
            if key != "text" or not isinstance(inner, str):
                problems += _text_problems(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            problems += _text_problems(inner, f"{where}[{n}]")
    return problems


def _dropped(raw: Any, shaped: Any, path: str = "") -> list[str]:
    """Keys of `raw` that slack_sdk's model left out: unknown to Slack, or empty."""
    if isinstance(raw, dict) and isinstance(shaped, dict):
        out: list[str] = []
        for key, value in raw.items():
            if key not in shaped:
                out.append(f"{path}.{key}" if path else key)
            elif key == "type" and value != shaped[key]:
                out.append(f"{path}.type {value!r}" if path else f"type {value!r}")
            else:
                out += _dropped(value, shaped[key], f"{path}.{key}" if path else key)
        return out
    if isinstance(raw, list) and isinstance(shaped, list) and len(raw) == len(shaped):
        out = []
        for n, (a, b) in enumerate(zip(raw, shaped, strict=True)):
            out += _dropped(a, b, f"{path}[{n}]")
        return out
    return []
