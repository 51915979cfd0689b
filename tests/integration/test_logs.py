"""Log lines of a whole scripted run: one JSON object each, the request id on every line
about the request (in the listener, after the ack and in the worker), and no secret."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot.logs import Context, JsonFormatter, Redact, start_fields
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, SECRET, BotUnderTest

TOKEN = "xoxb-test"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(Context())
    handler.addFilter(Redact([TOKEN, SECRET]))
    start_fields()  # this thread may have served an in-process Bolt request before
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_a_scripted_approval_logs_the_request_id_and_no_secret(
    make_bot, captured: io.StringIO
) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.services.settings.slack_bot_token  # noqa: B018 - the harness's token is TOKEN
    request_id = submitted(bot)
    bot.approve(request_id, APPROVER)
    bot.wait()
    text = captured.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]  # each line one object
    assert len(lines) > 20
    assert TOKEN not in text
    assert SECRET not in text
    about = [line for line in lines if request_id in line["message"]]
    assert about, "no line names the request"
    missing = [
        {k: v for k, v in line.items() if k != "message"}
        for line in about
        if line.get("request_id") != request_id
    ]
    assert missing == []
    jobs = [line for line in lines if line.get("job_id")]
    kinds = {line["job_id"].split(":")[0] for line in jobs}
    assert {"quote", "purchase"} <= kinds
    # The open job asks EC2 whether the type is sold before the request is stored: its
    # lines come before there is an id to name.
    stored = [line for line in jobs if not line["job_id"].startswith("open:")]
    assert all(line.get("request_id") == request_id for line in stored)
    # The click: every line of it names the request, the bot's and Bolt's. (A line of
    # redis-py about a connection it opens on the way is about the pool, not the request.)
    approver = [
        line
        for line in lines
        if line.get("slack_user") == APPROVER and not line["logger"].startswith("redis.")
    ]
    assert approver
    unnamed = [(x["logger"], x["message"]) for x in approver if x.get("request_id") != request_id]
    assert unnamed == []
