"""Small helpers shared by listeners: replies and payload reading."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from slack_bolt import Respond
from slack_sdk import WebClient

from bot.blocks.text import esc

SORRY = (
    ":x: That did not go through: gpu-bot hit an error (the details are in its log). "
    "Try again in a minute; `/gpu status` shows where your requests are."
)


def sorry(respond: Respond) -> Callable[[Exception], None]:
    """An `on_error` for work after the ack of a command or a click in a message."""
    return lambda _exc: reply_error_text(respond, SORRY)


def sorry_where_clicked(
    body: dict[str, Any], client: WebClient, respond: Respond
) -> Callable[[Exception], None]:
    """An `on_error` for a click that may come from App Home (no response_url)."""
    return lambda _exc: tell(body, client, respond, SORRY)


def reply_error_text(respond: Respond, text: str) -> None:
    respond(text=text, response_type="ephemeral", replace_original=False)


def reply_error(respond: Respond, text: str) -> None:
    """An ephemeral refusal next to what the user clicked; the original stays."""
    respond(text=f":warning: {esc(text)}", response_type="ephemeral", replace_original=False)


def tell(body: dict[str, Any], client: WebClient, respond: Respond, text: str) -> None:
    """Reply where the click came from: ephemerally in a channel, by DM from App Home
    (Home actions carry no response_url)."""
    if body.get("response_url"):
        respond(text=text, response_type="ephemeral", replace_original=False)
    else:
        client.chat_postMessage(channel=body["user"]["id"], text=text)


def metadata_of(view: dict[str, Any]) -> dict[str, str]:
    """A view's private_metadata (JSON object of strings); empty when unreadable."""
    try:
        data = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def view_values(view: dict[str, Any]) -> dict[str, str | None]:
    """The submitted value of each input block, by block id, as text."""
    values: dict[str, str | None] = {}
    for block_id, elements in view.get("state", {}).get("values", {}).items():
        for element in elements.values():
            values[block_id] = _element_value(element)
    return values


def _element_value(element: dict[str, Any]) -> str | None:
    kind = element.get("type")
    if kind == "static_select":
        selected = element.get("selected_option")
        return selected["value"] if selected else None
    if kind == "checkboxes":
        return ",".join(o["value"] for o in element.get("selected_options") or [])
    if kind == "datepicker":
        return element.get("selected_date")
    if kind == "timepicker":
        return element.get("selected_time")
    return element.get("value")
