"""The services' Notifier on Slack: approval cards and direct messages."""

from __future__ import annotations

import logging

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.blocks.requests import card_fallback, request_card, requester_update
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

    def tell_requester(self, record: CapacityRecord) -> None:
        try:
            self.client.chat_postMessage(channel=record.requester, text=requester_update(record))
        except SlackApiError as exc:
            log.warning("could not message %s about %s: %s", record.requester, record.id, exc)
