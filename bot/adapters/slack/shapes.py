"""The fields Bolt reads from every payload, whatever its type, checked for the type Slack
sends them with.

Before any listener runs, Bolt builds the request's context from a payload's ids
(`slack_bolt.request.internals.build_context`: the enterprise, team, user and channel,
from the payload, its first authorization, its event, message or item), tests its kind
(`payload_utils`: a view submission's `view.type`) and, for a payload nobody handles,
logs a summary of it (`view.get("type")`). It indexes and calls `.get` on what it
finds, so a signed payload with a string where Slack sends an object (an `authorizations`
that is a string, a `view` that is a list or lacks its `type`) raises there: a 500 and a
traceback. Slack sends these fields as below
(https://api.slack.com/reference/interaction-payloads,
https://api.slack.com/apis/events-api#callback-field); anything else gets a 400.
"""

from __future__ import annotations

from typing import Any

# Text, or null, where present.
TEXT = (
    "type", "team_id", "enterprise_id", "user_id", "channel_id", "api_app_id",
    "context_team_id", "context_enterprise_id", "thread_ts", "function_execution_id",
    "bot_access_token", "trigger_id", "response_url", "callback_id", "action_id",
    "block_id", "user_team", "subtype", "channel_type", "bot_id", "message_ts", "view_id",
)  # fmt: skip
# An id, an object (whose `id` is text), or null.
ID_OR_OBJECT = ("enterprise", "team", "user", "channel")
# Objects (or null) that Bolt reads the same ids from.
NESTED = ("event", "message", "previous_message", "item", "assistant_thread", "container")
# Lists of objects (or null), each read the same way.
LISTS = ("authorizations", "actions", "response_urls")
# Bolt stops reading a payload's ids this deep (event -> message -> ...).
MAX_NESTING = 4
# A user id names the person everything is stored, shown and written under (records,
# Redis keys, DMs, the spend CSV). Slack's are a U or W and upper-case letters and digits,
# about 9 to 11 long (Slack says they may grow, so the bound leaves room): anything else in
# a signed payload is refused before a listener keeps it.
MAX_USER_ID_CHARS = 32
_USER_KEYS = ("user_id", "user")


def shape_problem(payload: dict[str, Any], where: str = "payload") -> str | None:
    """What is wrong with a payload's shape, in one line; None when Bolt can read it."""
    # A top-level event, where present, is an object, and so is its function: Bolt reads
    # them as `body.get("event", {}).get("function", {}).get(...)` (its middleware, and
    # its hint for a function_executed event nobody handles), which a null breaks.
    if "event" in payload:
        event = payload["event"]
        if not isinstance(event, dict):
            return f"{where}.event is not an object"
        if "function" in event and not isinstance(event["function"], dict):
            return f"{where}.event.function is not an object"
    # Bolt reads `len(body["response_urls"])` whenever the key is there (with no
    # response_url beside it): a null breaks that too.
    if "response_urls" in payload and not isinstance(payload["response_urls"], list):
        return f"{where}.response_urls is not a list"
    return _problem(payload, where, 0)


def _problem(node: dict[str, Any], where: str, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return None
    for key in TEXT:
        if not isinstance(node.get(key), str | None):
            return f"{where}.{key} is not text"
    for key in _USER_KEYS:
        value = node.get(key)
        found = value.get("id") if isinstance(value, dict) else value
        if isinstance(found, str) and found and not is_user_id(found):
            return (
                f"{where}.{key} is not a Slack user id (U or W, then upper-case letters and "
                f"digits, at most {MAX_USER_ID_CHARS} characters; this one has {len(found)})"
            )
    for key in ID_OR_OBJECT:
        value = node.get(key)
        if isinstance(value, dict):
            if not isinstance(value.get("id"), str | None):
                return f"{where}.{key}.id is not text"
        elif not isinstance(value, str | None):
            return f"{where}.{key} is neither an id nor an object"
    for key in NESTED:
        value = node.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"{where}.{key} is not an object"
        found = _problem(value, f"{where}.{key}", depth + 1)
        if found:
            return found
    for key in LISTS:
        items = node.get(key)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return f"{where}.{key} is not a list of objects"
        for index, item in enumerate(items):
            found = _problem(item, f"{where}.{key}[{index}]", depth + 1)
            if found:
                return found
    return _view_problem(node, where)


def _view_problem(node: dict[str, Any], where: str) -> str | None:
    """A view, where there is one (even null: Bolt's summary of an unhandled payload reads
    it), is an object with its type (Slack's say modal, home or workflow_step) and text
    ids."""
    if "view" not in node:
        return None
    view = node["view"]
    if not isinstance(view, dict) or not isinstance(view.get("type"), str):
        return f"{where}.view is not an object with a type"
    for key in ("id", "callback_id", "private_metadata", "app_installed_team_id", "team_id"):
        if not isinstance(view.get(key), str | None):
            return f"{where}.view.{key} is not text"
    return None


def is_user_id(value: str) -> bool:
    return (
        2 <= len(value) <= MAX_USER_ID_CHARS
        and value[0] in "UW"
        and value.isascii()
        and value.isalnum()
        and value == value.upper()
    )
