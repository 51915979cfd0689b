"""Real Slack request bodies, signed the way Slack signs them."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

TEAM = {"id": "T0EXAMPLE", "domain": "example"}


def sign(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
    }


def slash_command(
    text: str, user: str, response_url: str, trigger_id: str = "T-1", channel: str = "C0REQUESTS"
) -> tuple[str, str]:
    """(body, content type) of `/gpu TEXT`. Slack escapes &, < and > in the text."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body = urlencode(
        {
            "token": "legacy",
            "team_id": TEAM["id"],
            "team_domain": TEAM["domain"],
            "channel_id": channel,
            "channel_name": "gpu",
            "user_id": user,
            "user_name": user.lower(),
            "command": "/gpu",
            "text": escaped,
            "api_app_id": "A0GPUBOT",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id,
        }
    )
    return body, "application/x-www-form-urlencoded"


def _interactive(payload: dict[str, Any]) -> tuple[str, str]:
    return urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"


def button_click(
    action_id: str,
    value: str,
    user: str,
    response_url: str | None,
    container: str = "message",
    trigger_id: str = "T-2",
    channel: str = "C0APPROVALS",
    message_ts: str = "1.0",
) -> tuple[str, str]:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "team": TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": "A0GPUBOT",
        "token": "legacy",
        "trigger_id": trigger_id,
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "b",
                "value": value,
                "action_ts": str(time.time()),
            }
        ],
    }
    if container == "home":
        payload["container"] = {"type": "view", "view_id": "V0HOME"}
        payload["view"] = {"id": "V0HOME", "type": "home", "blocks": []}
    else:
        payload["container"] = {"type": "message", "message_ts": message_ts, "channel_id": channel}
        payload["channel"] = {"id": channel, "name": "gpu"}
        payload["message"] = {"ts": message_ts, "text": "", "blocks": []}
        payload["response_url"] = response_url
    return _interactive(payload)


def view_submission(
    callback_id: str,
    values: dict[str, dict[str, Any]],
    user: str,
    private_metadata: str = "",
    view_id: str = "V0MODAL",
) -> tuple[str, str]:
    """`values`: block id -> the element state (e.g. {"type": "plain_text_input",
    "value": "3d"}); the element's action id is "value", as the builders make it.
    `view_id`: Slack gives every opened modal its own."""
    payload = {
        "type": "view_submission",
        "team": TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": "A0GPUBOT",
        "token": "legacy",
        "trigger_id": "T-3",
        "view": {
            "id": view_id,
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "blocks": [],
            "state": {"values": {block: {"value": element} for block, element in values.items()}},
        },
    }
    return _interactive(payload)


def event(event_body: dict[str, Any]) -> tuple[str, str]:
    body = json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM["id"],
            "api_app_id": "A0GPUBOT",
            "type": "event_callback",
            "event_id": f"Ev{time.time_ns()}",
            "event_time": int(time.time()),
            "event": event_body,
        }
    )
    return body, "application/json"


def text_input(value: str) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def select(value: str) -> dict[str, Any]:
    return {
        "type": "static_select",
        "selected_option": {"value": value, "text": {"type": "plain_text", "text": value}},
    }
