"""No signed payload is answered 5xx or leaves a traceback in the log.

Hypothesis sends signed requests of every shape Slack posts to /slack/events (slash
commands, block_actions, view_submission, view_closed, shortcuts, event_callback,
url_verification), each a real payload with a few of its fields dropped or swapped for
any JSON value, through the real HTTP front to the real Bolt app, then runs the work the
request handed off and the jobs it scheduled. A 5xx, or a traceback logged anywhere (a
listener, the work after the ack, a job, a thread), fails the test with the payload.

GPU_BOT_FUZZ_EXAMPLES sets how many payloads are sent (a default that keeps the test
under 15 s; raise it to look harder: `GPU_BOT_FUZZ_EXAMPLES=2000 python -m pytest
tests/integration/test_signed_fuzz.py`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote_plus, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest
from tests.slack_payloads import TEAM

EXAMPLES = int(os.environ.get("GPU_BOT_FUZZ_EXAMPLES", "1000"))
FORM = "application/x-www-form-urlencoded"
USER = {"id": REQUESTER, "username": "requester", "team_id": TEAM["id"]}

# --- the values a field may take -------------------------------------------------------

_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "R1", "R1|x", "U0X", REQUESTER, APPROVER, "T0EXAMPLE", "home"])
)
any_json = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
# Where the bot may be told to answer: Slack's own (the fake's), or forged.
FORGED_URLS = ["ftp://x", "x", "http://127.0.0.1:1/nowhere", "file:///etc/passwd", "//x", ""]
# Keys some Slack payload carries, set anywhere with any value.
KNOWN_KEYS = [
    "type", "user", "user_id", "team", "team_id", "enterprise", "enterprise_id", "api_app_id",
    "authorizations", "event", "event_id", "challenge", "actions", "action_id", "value",
    "view", "callback_id", "state", "values", "private_metadata", "container", "channel",
    "channel_id", "message", "message_ts", "response_url", "response_urls", "trigger_id",
    "is_enterprise_install", "selected_option", "text", "command", "tab", "id", "ts",
    "is_ephemeral", "hash", "submit", "blocks",
]  # fmt: skip


# --- real payloads, one of each shape --------------------------------------------------


def _metadata(request: str, response_url: str) -> str:
    return json.dumps(
        {
            "request": request,
            "response_url": response_url,
            "channel": "C0X",
            "opened_from": "message",
        }
    )


def block_actions(action_id: str, value: str, response_url: str, home: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "team": dict(TEAM),
        "user": dict(USER),
        "api_app_id": "A0GPUBOT",
        "trigger_id": "T-2",
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value}],
    }
    if home:
        payload["container"] = {"type": "view", "view_id": "V0HOME"}
        payload["view"] = {"id": "V0HOME", "type": "home", "blocks": [], "callback_id": ""}
    else:
        payload["container"] = {"type": "message", "message_ts": "1.0", "channel_id": "C0X"}
        payload["channel"] = {"id": "C0X", "name": "gpu"}
        payload["message"] = {"ts": "1.0", "text": "", "blocks": []}
        payload["response_url"] = response_url
    return payload


def view_payload(
    kind: str, callback_id: str, block: str, value: Any, url: str, request: str = "R1"
) -> dict[str, Any]:
    return {
        "type": kind,
        "team": dict(TEAM),
        "user": dict(USER),
        "api_app_id": "A0GPUBOT",
        "trigger_id": "T-3",
        "view": {
            "id": "V0MODAL",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": _metadata(request, url),
            "blocks": [],
            "state": {"values": {block: {"value": {"type": "plain_text_input", "value": value}}}},
        },
        "is_cleared": False,
    }


def shortcut(kind: str, callback_id: str, url: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": kind,
        "team": dict(TEAM),
        "user": dict(USER),
        "callback_id": callback_id,
        "trigger_id": "T-4",
    }
    if kind == "message_action":
        payload |= {"channel": {"id": "C0X"}, "message": {"ts": "1.0"}, "response_url": url}
    return payload


def event_callback(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "token": "legacy",
        "team_id": TEAM["id"],
        "api_app_id": "A0GPUBOT",
        "type": "event_callback",
        "event_id": "Ev1",
        "event_time": 1,
        "authorizations": [{"team_id": TEAM["id"], "user_id": "UGPUBOT", "is_bot": True}],
        "event": event,
    }


def url_verification() -> dict[str, Any]:
    return {"token": "legacy", "challenge": "c", "type": "url_verification"}


def slash_command(text: str, url: str) -> dict[str, Any]:
    return {
        "team_id": TEAM["id"],
        "channel_id": "C0X",
        "user_id": REQUESTER,
        "command": "/gpu",
        "text": text,
        "api_app_id": "A0GPUBOT",
        "response_url": url,
        "trigger_id": "T-1",
    }


COMMANDS = [
    "", "help", "status", "list", "watches", "spend", "reserve 2 p5.48xlarge 3d",
    "quote 1 p4d.24xlarge 1d", "watch 1 p5.48xlarge 2d", "cancel R1", "deploy R1", "x" * 300,
]  # fmt: skip
EVENTS = ["app_home_opened", "app_mention", "message", "app_uninstalled", "tokens_revoked"]


@st.composite
def originals(draw: st.DrawFn, response_url: str, request: str) -> tuple[str, dict[str, Any]]:
    """(how it is sent: "json", "payload" or "command", a real payload); buttons and
    forms name `request` (a request waiting for approval) or another."""
    url = draw(st.sampled_from([response_url, *FORGED_URLS]))
    text = st.sampled_from(COMMANDS) | st.text(max_size=40)
    kind = draw(st.sampled_from(["block_actions", "view", "shortcut", "event", "url", "command"]))
    if kind == "block_actions":
        action = draw(st.sampled_from([a.value for a in ActionId]) | st.text(max_size=8))
        values = [request, f"{request}|x", "R1", "W1", "", "nope"]
        value = draw(st.sampled_from(values) | st.text(max_size=12))
        return "payload", block_actions(action, value, url, draw(st.booleans()))
    if kind == "view":
        view_kind = draw(st.sampled_from(["view_submission", "view_closed"]))
        callback = draw(st.sampled_from([c.value for c in CallbackId]) | st.text(max_size=8))
        block = draw(st.sampled_from([b.value for b in FormBlock]))
        return "payload", view_payload(view_kind, callback, block, draw(text), url, request)
    if kind == "shortcut":
        shortcut_kind = draw(st.sampled_from(["shortcut", "message_action"]))
        return "payload", shortcut(shortcut_kind, draw(st.text(max_size=8)), url)
    if kind == "event":
        event = {"type": draw(st.sampled_from(EVENTS)), "user": REQUESTER, "tab": "home"}
        return "json", event_callback(event)
    if kind == "url":
        return "json", url_verification()
    return "command", slash_command(draw(text), url)


def _paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a payload a value sits (the payload itself is `()`)."""
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*at, index))


def _at(payload: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        payload = payload[step]
    return payload


@st.composite
def mutated(draw: st.DrawFn, response_url: str, request: str) -> tuple[str, str]:
    """(body, content type): a real payload with up to three fields dropped, swapped for
    any value, or added; then signed and sent as Slack sends its kind."""
    how, payload = draw(originals(response_url, request))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(payload))))
        target = _at(payload, path[:-1]) if path else None
        change = draw(st.sampled_from(["drop", "swap", "add"]))
        if change == "add" or not path:
            node = _at(payload, path)
            if isinstance(node, dict):
                node[draw(st.sampled_from(KNOWN_KEYS))] = draw(any_json)
        elif change == "drop" and isinstance(target, dict):
            del target[path[-1]]
        else:
            target[path[-1]] = draw(any_json)
    if how == "json":
        return json.dumps(payload), "application/json"
    if how == "payload":
        return urlencode({"payload": json.dumps(payload)}), FORM
    fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in payload.items()}
    return urlencode(fields), FORM


# --- what counts as a failure ----------------------------------------------------------


class _Tracebacks(logging.Handler):
    """Every log record with a traceback, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.exc_text or record.stack_info:
            self.seen.append(self.format(record))


@contextmanager
def tracebacks() -> Iterator[list[str]]:
    """What was logged with a traceback, and what a thread raised, meanwhile."""
    handler = _Tracebacks()
    root = logging.getLogger()
    root.addHandler(handler)
    before = threading.excepthook

    def thread_raised(args: threading.ExceptHookArgs) -> None:
        handler.seen.append(f"thread {args.thread}: {args.exc_type.__name__}: {args.exc_value}")

    threading.excepthook = thread_raised
    try:
        yield handler.seen
    finally:
        threading.excepthook = before
        root.removeHandler(handler)


def settle(bot: BotUnderTest) -> None:
    """The work the request handed off, and every job it made due, run to the end."""
    assert bot.services.after_ack.wait_idle(20), "background work did not finish"
    bot.worker.drain()
    assert bot.services.after_ack.wait_idle(20), "background work did not finish"


def _form(payload: dict[str, Any]) -> tuple[str, str]:
    return urlencode({"payload": json.dumps(payload)}), FORM


def _view_without_type() -> tuple[str, str]:
    payload = view_payload("view_submission", CallbackId.SUBMIT.value, "reason", "x", "ftp://x")
    del payload["view"]["type"]
    return _form(payload)


# What was answered 500, or logged a traceback, before the shapes were checked at the edge.
SEEN_BREAKING = [
    (json.dumps(url_verification() | {"authorizations": "x"}), "application/json"),
    (json.dumps(url_verification() | {"authorizations": ["x", 1]}), "application/json"),
    (json.dumps(url_verification() | {"authorizations": 7}), "application/json"),
    _view_without_type(),
    _form(block_actions(ActionId.SUBMIT_OPEN.value, "R1", "ftp://x", home=False)),
    _form(shortcut("shortcut", "x", "") | {"command": []}),
    _form(shortcut("shortcut", "x", "") | {"view": None}),
    _form(shortcut("shortcut", "x", "") | {"event": None}),  # Bolt's middleware reads event.bot_id
    (
        json.dumps(
            event_callback(
                {"type": "function_executed", "function_execution_id": "F1", "function": None}
            )
        ),
        "application/json",
    ),  # and its hint for an unhandled function_executed reads event.function.callback_id
    (urlencode(slash_command("help", "ftp://x") | {"authorizations": "null"}), FORM),
    # Bolt's context reads len(response_urls) whenever the key is there.
    (
        json.dumps(event_callback({"type": "app_mention"}) | {"response_urls": None}),
        "application/json",
    ),
    # A form's input value that is not text: the listener read it as text.
    _form(view_payload("view_submission", CallbackId.RESERVE_FORM.value, "count", 1, "ftp://x")),
    _form(view_payload("view_submission", CallbackId.SUBMIT.value, "reason", {}, "ftp://x")),
]


def test_no_signed_payload_is_answered_5xx_or_logs_a_traceback(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.expect_invalid()  # forged text may make a message Slack refuses: not this test's
    request = submitted(bot)
    _, response_url = bot.new_response_url()
    statuses: Counter[int] = Counter()
    started = time.monotonic()

    def send(body: str, content_type: str) -> None:
        with tracebacks() as seen:
            reply = bot.post(body, content_type)
            settle(bot)
        statuses[reply.status] += 1
        sent = unquote_plus(body)
        assert reply.status < 500, f"{reply.status} {reply.body!r} for {sent}"
        assert not seen, f"a traceback for {sent}:\n" + "\n".join(seen)

    for body, content_type in SEEN_BREAKING:
        send(body, content_type)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(response_url, request))
    def fuzz(sent: tuple[str, str]) -> None:
        send(*sent)

    fuzz()
    took = time.monotonic() - started
    print(f"{sum(statuses.values())} signed payloads in {took:.1f} s: {dict(statuses)}")


def test_a_forged_response_url_is_not_posted_to_and_the_answer_goes_by_dm(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request = submitted(bot)
    bot.fake.reset()
    with tracebacks() as seen:
        reply = bot.post(*_form(block_actions(ActionId.CANCEL.value, request, "ftp://x", False)))
        bot.wait()
    assert reply.status == 200
    assert not seen
    assert bot.fake.of("response_url") == []
    dms = [c.args for c in bot.fake.of("chat.postMessage") if c.args.get("channel") == REQUESTER]
    assert any("cancel" in str(dm.get("text", "")).lower() for dm in dms), dms
