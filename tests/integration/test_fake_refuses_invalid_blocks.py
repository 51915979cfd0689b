"""The fake Web API refuses what Slack refuses (bot/adapters/slack/block_rules.py), so no
test can pass with a message or view Slack would not take."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.slack_fake import FakeSlack


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def button(text: str, value: str = "v") -> dict[str, Any]:
    return {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": text},
                "action_id": "a",
                "value": value,
            }
        ],
    }


@pytest.fixture
def client(fake_slack: FakeSlack) -> WebClient:
    client = WebClient(token="xoxb-test", base_url=fake_slack.api_url)
    client.retry_handlers = []
    return client


VALID = [section("hello"), button("Approve"), {"type": "divider"}]


@pytest.mark.parametrize(
    "blocks",
    [
        [section("x" * 3001)],  # section text over 3,000 characters
        [section("")],  # empty text
        [section("   ")],  # blank text
        [section("ok")] * 51,  # more than 50 blocks in a message
        [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
        [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}],
        [button("x" * 76)],  # button text over 75
        [button("ok", "v" * 2001)],  # button value over 2,000
        [{"type": "actions", "elements": []}],
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
        [{"type": "header", "text": {"type": "mrkdwn", "text": "*h*"}}],  # header is plain
        [{"type": "sectoin", "text": {"type": "mrkdwn", "text": "typo"}}],  # unknown type
        [{**section("a"), "acessory": {"type": "image"}}],  # a key Slack does not know
        [{**section("a"), "block_id": "b"}, {**section("b"), "block_id": "b"}],
    ],
)
def test_a_message_slack_would_refuse_is_refused(
    client: WebClient, fake_slack: FakeSlack, blocks: list[dict[str, Any]]
) -> None:
    with pytest.raises(SlackApiError) as refused:
        client.chat_postMessage(channel="C0ROOM", text="fallback", blocks=blocks)
    assert refused.value.response["error"] == "invalid_blocks"
    assert fake_slack.messages == {}  # nothing was posted
    assert len(fake_slack.invalid) == 1


def test_a_message_without_text_or_blocks_is_refused(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as refused:
        client.chat_postMessage(channel="C0ROOM", text="")
    assert refused.value.response["error"] == "no_text"


def test_valid_messages_and_views_pass(client: WebClient, fake_slack: FakeSlack) -> None:
    client.chat_postMessage(channel="C0ROOM", text="fallback", blocks=VALID)
    client.chat_postMessage(channel="C0ROOM", text="text only")
    client.views_publish(user_id="U0A", view={"type": "home", "blocks": VALID})
    modal = {
        "type": "modal",
        "callback_id": "c",
        "title": {"type": "plain_text", "text": "Reserve GPUs"},
        "submit": {"type": "plain_text", "text": "Submit"},
        "blocks": VALID,
    }
    client.views_open(trigger_id="t", view=modal)
    assert fake_slack.invalid == []


@pytest.mark.parametrize(
    "view",
    [
        {"type": "modal", "title": {"type": "plain_text", "text": "t" * 25}, "blocks": VALID},
        {"type": "modal", "title": {"type": "plain_text", "text": "t"}, "blocks": VALID * 34},
        {"type": "home", "blocks": [section("")]},
        {
            "type": "modal",
            "title": {"type": "plain_text", "text": "t"},
            "blocks": VALID,
            "private_metadata": "m" * 3001,
        },
    ],
)
def test_a_view_slack_would_refuse_is_refused(
    client: WebClient, fake_slack: FakeSlack, view: dict[str, Any]
) -> None:
    def show() -> None:
        if view["type"] == "home":
            client.views_publish(user_id="U0A", view=view)
        else:
            client.views_open(trigger_id="t", view=view)

    with pytest.raises(SlackApiError) as refused:
        show()
    assert refused.value.response["error"] == "invalid_arguments"
    assert len(fake_slack.invalid) == 1
