"""The Web API client used by listeners and the quote jobs waits out a short Retry-After,
and raises a long one at once instead of sleeping in the job (or listener) that made it."""

from __future__ import annotations

import time

import pytest
from slack_sdk.errors import SlackApiError

from bot.adapters.slack.client import make_web_client
from tests.slack_fake import FakeSlack


def test_a_short_retry_after_is_waited_out(fake_slack: FakeSlack) -> None:
    client = make_web_client("xoxb-test", fake_slack.api_url)
    fake_slack.fail("chat.postMessage", 429, retry_after=1)
    client.chat_postMessage(channel="U0A", text="hello")
    statuses = [c.status for c in fake_slack.of("chat.postMessage", ok_only=False)]
    assert statuses == [429, 200]


def test_a_long_retry_after_is_raised_at_once_not_slept(fake_slack: FakeSlack) -> None:
    client = make_web_client("xoxb-test", fake_slack.api_url)
    fake_slack.fail("chat.postMessage", 429, retry_after=120)
    started = time.monotonic()
    with pytest.raises(SlackApiError) as limited:
        client.chat_postMessage(channel="U0A", text="hello")
    assert time.monotonic() - started < 5
    assert limited.value.response.status_code == 429
    assert len(fake_slack.of("chat.postMessage", ok_only=False)) == 1
