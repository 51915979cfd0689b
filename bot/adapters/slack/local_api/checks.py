"""Calls the local Slack API refuses as Slack does: a message or view Slack would not
accept (see block_rules), answered the way each kind of endpoint answers it."""

from __future__ import annotations

import json
from typing import Any

from bot.adapters.slack.block_rules import message_problems, view_problems
from bot.adapters.slack.local_api.calls import (
    MESSAGE_METHODS,
    RESPONSE_URL_METHOD,
    VIEW_METHODS,
    decoded,
)


def problems(method: str, args: dict[str, Any]) -> list[str]:
    """Why Slack would refuse this call's message or view ([] when it would not)."""
    try:
        if method in MESSAGE_METHODS:
            if str(args.get("delete_original", "")).lower() in ("1", "true"):
                return []
            return message_problems(args.get("text"), decoded(args.get("blocks"), []))
        if method in VIEW_METHODS:
            return view_problems(decoded(args.get("view"), {}))
    except json.JSONDecodeError as exc:
        return [f"not JSON: {exc}"]
    return []


def refusal(method: str, problems: list[str]) -> tuple[int, dict[str, Any]]:
    if method in VIEW_METHODS:
        # views.* say invalid_arguments, with the reasons in response_metadata.
        messages = [f"[ERROR] {p}" for p in problems]
        return 200, {
            "ok": False,
            "error": "invalid_arguments",
            "response_metadata": {"messages": messages},
        }
    error = "no_text" if problems[0].startswith("no_text") else "invalid_blocks"
    # A response_url answers with an HTTP error; the Web API with ok: false.
    status = 400 if method == RESPONSE_URL_METHOD else 200
    return status, {"ok": False, "error": error, "errors": problems}
