"""The services' Notifier on Slack: approval cards, comparisons and direct messages.

Failures raise (after the client's own retries) so the notify job is tried again later;
only a card that is gone for good is given up on.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.adapters.slack.client import make_webhook_client
from bot.blocks.deploy import deploy_button, deployable
from bot.blocks.quote import quote_blocks, quote_fallback
from bot.blocks.requests import card_fallback, request_card, requester_update
from bot.blocks.text import clip, esc
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, SlackMessage

log = logging.getLogger(__name__)
# chat.update errors that no retry will mend: the card was deleted or cannot be edited.
CARD_GONE = frozenset({"message_not_found", "channel_not_found", "cant_update_message"})


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
            if exc.response.get("error") not in CARD_GONE:
                raise
            log.warning(
                "the card of %s is gone (%s); /gpu status still shows it",
                record.id,
                exc.response.get("error"),
            )

    def quote_ready(self, record: CapacityRecord, response_url: str | None) -> None:
        if record.quote is None:
            failed = f":x: {esc(record.failure or 'Quoting failed.')}"
            self.reply(record.requester, response_url, failed)
            return
        blocks = quote_blocks(record.quote, record.id)
        self.reply(record.requester, response_url, quote_fallback(record.quote), blocks)

    def show_quote(self, user: str, response_url: str | None, quote: Quote) -> None:
        self.reply(user, response_url, quote_fallback(quote), quote_blocks(quote))

    def reply(
        self,
        user: str,
        response_url: str | None,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        replace: bool = True,
    ) -> None:
        """Answer where a command was typed (replacing the "working on it" message at its
        response_url, unless `replace` is False); by DM when there is none, or when it no
        longer works (it expires after 30 minutes and 5 uses)."""
        if response_url:
            sent = make_webhook_client(response_url).send(
                text=text, blocks=blocks, response_type="ephemeral", replace_original=replace
            )
            if sent.status_code == 200:
                return
            log.warning("response_url answered %s; sending a DM instead", sent.status_code)
        self.client.chat_postMessage(channel=user, text=text, blocks=blocks)

    def tell_requester(self, record: CapacityRecord) -> None:
        text = requester_update(record)
        if not deployable(record):
            self.client.chat_postMessage(channel=record.requester, text=text)
            return
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": clip(text, 3000)}}]
        blocks.append(deploy_button(record))
        self.client.chat_postMessage(channel=record.requester, text=text, blocks=blocks)
