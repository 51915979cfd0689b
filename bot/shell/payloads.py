"""The request bodies Slack sends to an app: slash commands, button clicks, view
submissions and the app_home_opened event, shaped as Slack shapes them. Pure."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from bot.shell.people import Person

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
TEAM = {"id": "TLOCAL", "domain": "local"}  # the team `build_app` authorizes locally
APP_ID = "A0GPUBOT"
Body = tuple[str, str]  # (body, content type)


def slack_escape(text: str) -> str:
    """Slack escapes &, < and > in what people type before the app sees it."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _user(person: Person) -> dict[str, str]:
    return {"id": person.id, "username": person.name, "name": person.name, "team_id": TEAM["id"]}


def _interactive(payload: dict[str, Any]) -> Body:
    return urlencode({"payload": json.dumps(payload)}), FORM


def slash_command(
    command: str,
    text: str,
    person: Person,
    channel: tuple[str, str],
    response_url: str,
    trigger_id: str,
) -> Body:
    """`channel`: (id, name) of where the command is typed."""
    body = {
        "token": "local",
        "team_id": TEAM["id"],
        "team_domain": TEAM["domain"],
        "channel_id": channel[0],
        "channel_name": channel[1],
        "user_id": person.id,
        "user_name": person.name,
        "command": command,
        "text": slack_escape(text),
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return urlencode(body), FORM


def button_click(
    person: Person,
    button: dict[str, Any],
    block_id: str,
    where: dict[str, Any],
    trigger_id: str,
) -> Body:
    """`where`: what Slack adds about the surface clicked, `container` and then either
    `channel`, `message` and `response_url` or `view` (see `message_surface` and
    `view_surface`)."""
    action = {
        "type": "button",
        "action_id": button.get("action_id"),
        "block_id": block_id,
        "text": button.get("text"),
        "action_ts": f"{time.time():.6f}",
    }
    for optional in ("value", "style"):
        if optional in button:
            action[optional] = button[optional]
    payload = {
        "type": "block_actions",
        "team": TEAM,
        "user": _user(person),
        "api_app_id": APP_ID,
        "token": "local",
        "trigger_id": trigger_id,
        "actions": [action],
        **where,
    }
    return _interactive(payload)


def message_surface(
    channel: tuple[str, str],
    message: dict[str, Any],
    ephemeral: bool,
    response_url: str,
) -> dict[str, Any]:
    """A click on a message: `message` has ts, text and blocks (Slack leaves an ephemeral
    message out)."""
    surface = {
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel[0],
            "is_ephemeral": ephemeral,
        },
        "channel": {"id": channel[0], "name": channel[1]},
        "response_url": response_url,
    }
    if not ephemeral:
        surface["message"] = message
    return surface


def view_surface(view: dict[str, Any]) -> dict[str, Any]:
    """A click on a view (App Home): Slack sends no response_url then."""
    return {"container": {"type": "view", "view_id": view["id"]}, "view": view}


def view_submission(
    person: Person, view: dict[str, Any], values: dict[str, dict[str, Any]], trigger_id: str
) -> Body:
    """`values`: block id -> {action id -> element state}."""
    submitted = {**view, "state": {"values": values}}
    payload = {
        "type": "view_submission",
        "team": TEAM,
        "user": _user(person),
        "api_app_id": APP_ID,
        "token": "local",
        "trigger_id": trigger_id,
        "view": submitted,
        "response_urls": [],
    }
    return _interactive(payload)


def app_home_opened(person: Person, dm_channel: str, view: dict[str, Any] | None) -> Body:
    """The event Slack sends when someone opens the app's Home tab (with the view
    published before, if any)."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": person.id,
        "channel": dm_channel,
        "tab": "home",
        "event_ts": f"{time.time():.6f}",
    }
    if view is not None:
        event["view"] = view
    body = {
        "token": "local",
        "team_id": TEAM["id"],
        "api_app_id": APP_ID,
        "type": "event_callback",
        "event_id": f"Ev{time.time_ns()}",
        "event_time": int(time.time()),
        "event": event,
    }
    return json.dumps(body), JSON
