"""The services' Notifier on Slack: comparisons and replies where a command was typed.

Failures raise (after the client's own retries) so the job is tried again later. Approval
cards and decision DMs are not sent here but once-only (bot/services/notifications.py).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient

from bot.adapters.slack.client import make_webhook_client, may_post_to
from bot.blocks.quote import quote_blocks, quote_fallback
from bot.blocks.text import esc
from bot.domain.approval import SpendingPolicy
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord

log = logging.getLogger(__name__)


class SlackNotifier:
    def __init__(self, client: WebClient, limits: SpendingPolicy | None = None) -> None:
        self.client = client
        self.limits = limits  # a quote above them offers no Submit

    def quote_ready(self, record: CapacityRecord, response_url: str | None) -> None:
        if record.quote is None:
            failed = f":x: {esc(record.failure or 'Quoting failed.')}"
            self.reply(record.requester, response_url, failed)
            return
        blocks = quote_blocks(record.quote, record.id, self.limits)
        self.reply(record.requester, response_url, quote_fallback(record.quote), blocks)

    def show_quote(self, user: str, response_url: str | None, quote: Quote) -> None:
        self.reply(
            user, response_url, quote_fallback(quote), quote_blocks(quote, limits=self.limits)
        )

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
        longer works (it expires after 30 minutes and 5 uses), or is not Slack's."""
        if response_url and not may_post_to(response_url, str(self.client.base_url)):
            log.warning("a response_url that is not Slack's (%.60r); sending a DM", response_url)
            response_url = None
        if response_url:
            sent = make_webhook_client(response_url).send(
                text=text, blocks=blocks, response_type="ephemeral", replace_original=replace
            )
            if sent.status_code == 200:
                return
            log.warning("response_url answered %s; sending a DM instead", sent.status_code)
        self.client.chat_postMessage(channel=user, text=text, blocks=blocks)
