"""What comes in on /slack/events, checked before Bolt sees it.

Bolt trusts the shape of a verified payload: a signed body that is not UTF-8, not JSON
where JSON belongs, nested without end, or missing what every listener reads (a slash
command's user_id, a click's actions) makes it raise, and the caller gets a 500 and the
log a traceback. Here such a body gets a 400 with one line saying what is wrong, and an
unsigned or stale one a 401, before anything is parsed for Bolt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from bot.adapters.slack.shapes import shape_problem

# Slack's largest payload is a view submission: a modal of up to 100 blocks (views.open
# takes 250 kB) and its state, form-encoded. A megabyte is well above that.
MAX_BODY_BYTES = 1_000_000
# Slack refuses requests older than five minutes; Bolt does the same.
MAX_AGE_SECONDS = 300
# A signature verifies for 5 minutes either side of its timestamp: remember it that long.
REPLAY_WINDOW_SECONDS = 2 * MAX_AGE_SECONDS + 60
# Slack's payloads nest about 10 deep (view -> blocks -> element -> options -> text).
MAX_DEPTH = 40


@dataclass(frozen=True)
class Refusal:
    status: int  # 400 or 401
    reason: str  # one line for the log and the caller


def is_ssl_check(content_type: str, body: bytes) -> bool:
    """Slack's certificate check of a slash command's Request URL: a form POST with
    `ssl_check=1` (and a token), which Slack does not sign and expects a 200 for
    (https://docs.slack.dev/interactivity/implementing-slash-commands/; Bolt's SslCheck
    answers it before verifying signatures). It carries nothing to act on."""
    if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return False
    try:
        form = parse_qs(body.decode("utf-8"), max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return False
    return form.get("ssl_check") == ["1"] and not ({"command", "payload"} & form.keys())


def is_rate_limited_notice(content_type: str, body: bytes) -> bool:
    """The Events API's `app_rate_limited` envelope: Slack tells the app it dropped events
    over 30,000 an hour; it wants a 200 like any delivery, and Slack may turn event
    delivery off for an app that answers under 95% of them with 200
    (https://docs.slack.dev/apis/events-api/#rate-limiting, #failure-conditions).
    Call on a body whose signature is checked."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        return False
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("type") == "app_rate_limited"


def check_signature(
    secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float
) -> Refusal | None:
    """None when the request is Slack's: signed with our secret and under 5 minutes old."""
    if not timestamp or not signature:
        return Refusal(401, "unsigned")
    base = b"v0:" + timestamp.encode("latin-1", "replace") + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode("latin-1", "replace")):
        return Refusal(401, "bad signature")
    try:
        sent = int(timestamp)
    except ValueError:
        return Refusal(400, "signed, but the timestamp is not a number")
    if abs(now - sent) > MAX_AGE_SECONDS:
        return Refusal(401, "stale timestamp")
    return None


def check_payload(content_type: str, body: bytes) -> Refusal | None:
    """None when the (signed) body has the shape Bolt and our listeners read."""
    return read_payload(content_type, body)[0]


def read_payload(content_type: str, body: bytes) -> tuple[Refusal | None, dict[str, str] | None]:
    """`check_payload`'s answer, and a slash command's fields (None for anything else)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _bad("the body is not UTF-8"), None
    if content_type.split(";")[0].strip().lower() == "application/json":
        data, problem = _json(text, "the body")
        if problem:
            return _bad(problem), None
        problem = shape_problem(data, "the body") or _names_a_command(data)
        return (_bad(problem) if problem else _bad_event(data)), None
    try:
        form = parse_qs(text, keep_blank_values=True, max_num_fields=200)
    except ValueError as exc:
        return _bad(f"the form does not parse: {exc}"), None
    fields = {k: v[0] for k, v in form.items()}
    if "payload" in fields:
        data, problem = _json(fields["payload"], "payload")
        if problem:
            return _bad(problem), None
        problem = shape_problem(data) or _names_a_command(data)
        return (_bad(problem) if problem else _bad_interaction(data)), None
    if "command" in fields:
        missing = [k for k in ("command", "user_id", "team_id") if not fields.get(k)]
        if missing:
            return _bad(f"a slash command without {', '.join(missing)}"), None
        # Bolt reads a form's fields as it reads a JSON payload's: all are text here.
        problem = shape_problem(dict(fields), "the form")
        if problem:
            return _bad(problem), None
        return None, fields
    if "ssl_check" in fields:
        return None, None
    return _bad("neither a slash command, an interaction nor an event"), None


def _names_a_command(data: dict[str, Any]) -> str | None:
    """Bolt takes any payload with a `command` for a slash command (and its listener reads
    a command's fields); only a slash command's form has one."""
    return "a command field outside a slash command" if "command" in data else None


def _bad(reason: str) -> Refusal:
    return Refusal(400, reason)


def _json(text: str, what: str) -> tuple[Any, str | None]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None, f"{what} is not JSON"
    if not isinstance(data, dict):
        return None, f"{what} is not a JSON object"
    if _depth(data) > MAX_DEPTH:
        return None, f"{what} nests deeper than {MAX_DEPTH} levels"
    return data, None


def _depth(data: Any) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(node, dict):
            stack += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, depth + 1) for v in node]
    return deepest


# The events the app subscribes to (manifest.yml), with the fields their listeners read:
# (name, type, required). Slack sends them so; a body that does not gets a 400.
EVENT_FIELDS: dict[str, tuple[tuple[str, type, bool], ...]] = {
    "app_home_opened": (("user", str, True), ("tab", str, False), ("channel", str, False)),
}
# The envelope's fields Bolt reads to route and authorize an event.
_ENVELOPE_TEXT = ("team_id", "api_app_id", "event_id", "enterprise_id", "context_team_id")


def _bad_event(data: dict[str, Any]) -> Refusal | None:
    kind = data.get("type")
    if kind == "url_verification":
        return None if isinstance(data.get("challenge"), str) else _bad("no challenge")
    if kind == "event_callback":
        event = data.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return _bad("event_callback without an event object")
        for key in _ENVELOPE_TEXT:
            if not isinstance(data.get(key, ""), str | None):
                return _bad(f"event_callback {key} is not text")
        authorizations = data.get("authorizations", [])
        if not isinstance(authorizations, list) or not all(
            isinstance(a, dict) for a in authorizations
        ):
            return _bad("event_callback authorizations is not a list of objects")
        return _bad_event_fields(event)
    return _bad(f"unknown event envelope type {str(kind)[:40]!r}")


def _bad_event_fields(event: dict[str, Any]) -> Refusal | None:
    """Every field a listener reads, of the type Slack sends (before any listener runs)."""
    kind = str(event["type"])[:40]
    for name, wanted, required in EVENT_FIELDS.get(event["type"], ()):
        value = event.get(name)
        if value is None and not required and name not in event:
            continue
        if not isinstance(value, wanted) or (required and not value):
            return _bad(f"{kind} event without a {name} that is {wanted.__name__}")
    # Any other event names its user by id or, in some kinds, as an object.
    user = event.get("user", "")
    if not isinstance(user, str | dict):
        return _bad(f"{kind} event with a user that is neither an id nor an object")
    return None


def _bad_interaction(data: dict[str, Any]) -> Refusal | None:
    kind = data.get("type")
    if not isinstance(kind, str):
        return _bad("payload without a type")
    user = data.get("user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str) or not user["id"]:
        return _bad("payload without a user object with an id")
    if not isinstance(data.get("team"), dict | None):
        return _bad("team is not an object")
    if kind == "block_actions":
        actions = data.get("actions")
        if not isinstance(actions, list) or not actions:
            return _bad("a click without actions")
        for action in actions:
            if not isinstance(action, dict) or not isinstance(action.get("action_id"), str):
                return _bad("an action that is not an object with an action_id")
        for key in ("container", "view", "message", "channel"):
            if not isinstance(data.get(key), dict | None):
                return _bad(f"{key} is not an object")
    if kind in ("view_submission", "view_closed"):
        view = data.get("view")
        if not isinstance(view, dict) or not isinstance(view.get("callback_id"), str):
            return _bad("a view submission without a view object and its callback_id")
        state = view.get("state", {})
        if not isinstance(state, dict) or not isinstance(state.get("values", {}), dict):
            return _bad("view.state.values is not an object")
        for block in state.get("values", {}).values():
            if not isinstance(block, dict) or not all(isinstance(e, dict) for e in block.values()):
                return _bad("a view state value is not an object")
            for element in block.values():
                problem = _element_problem(element)
                if problem:
                    return _bad(problem)
        if not isinstance(view.get("private_metadata", ""), str):
            return _bad("view.private_metadata is not text")
    return None


# What an input's state carries, as Slack sends it: text (or null) for a text input,
# date and time pickers, an option object with a text value for a select, a list of them
# for checkboxes (https://api.slack.com/reference/interaction-payloads/views,
# https://api.slack.com/reference/block-kit/block-elements).
_ELEMENT_TEXT = ("type", "value", "selected_date", "selected_time")


def _element_problem(element: dict[str, Any]) -> str | None:
    for key in _ELEMENT_TEXT:
        if not isinstance(element.get(key), str | None):
            return f"a view state's {key} is not text"
    options = element.get("selected_options")
    chosen = [element.get("selected_option"), *(options if isinstance(options, list) else [])]
    if not isinstance(options, list | None) or not all(
        o is None or (isinstance(o, dict) and isinstance(o.get("value"), str)) for o in chosen
    ):
        return "a view state's selected option is not an option with a text value"
    return None
