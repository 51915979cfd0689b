"""The services' Notifier on Slack: approval cards and direct messages."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.adapters.slack.client import make_webhook_client
from bot.blocks.quote import quote_blocks, quote_fallback
from bot.blocks.requests import card_fallback, request_card, requester_update
from bot.blocks.text import esc
from bot.domain.records import CapacityRecord, SlackMessage

log = logging.getLogger(__name__)


class SlackNotifier:
    def __init__(self, client: WebClient, approval_channel: str) -> None:
        self.client = client
        self.approval_channel = approval_channel

    def post_request(self, record: CapacityRecord) -> SlackMessage | None:
        response = self.client.chat_postMessage(
            channel=self.approval_channel,
            text=card_fallback(record),
            blocks=request_card(record),
            unfurl_links=False,
        )
        return SlackMessage(channel=str(response["channel"]), ts=str(response["ts"]))

    def update_request(self, record: CapacityRecord) -> None:
        message = record.approval_message
        if message is None:
            return
        try:
            self.client.chat_update(
                channel=message.channel,
                ts=message.ts,
                text=card_fallback(record),
                blocks=request_card(record),
            )
        except SlackApiError as exc:
            # The state is already right in the store; a stale card is shown in /gpu status.
            log.warning("could not update the card of %s: %s", record.id, exc)

    def quote_ready(self, record: CapacityRecord, response_url: str | None) -> None:
        if record.quote is not None:
            text = quote_fallback(record.quote)
            blocks: list[dict[str, Any]] | None = quote_blocks(record.quote, record.id)
        else:
            text, blocks = f":x: {esc(record.failure or 'Quoting failed.')}", None
        self.reply(record.requester, response_url, text, blocks)

    def reply(
        self,
        user: str,
        response_url: str | None,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
    ) -> None:
        """Answer where a command was typed (replacing the "working on it" message at its
        response_url), or by DM when there is no response_url."""
        if response_url:
            make_webhook_client(response_url).send(
                text=text, blocks=blocks, response_type="ephemeral", replace_original=True
            )
        else:
            self.client.chat_postMessage(channel=user, text=text, blocks=blocks)

    def tell_requester(self, record: CapacityRecord) -> None:
        try:
            self.client.chat_postMessage(channel=record.requester, text=requester_update(record))
        except SlackApiError as exc:
            log.warning("could not message %s about %s: %s", record.requester, record.id, exc)
