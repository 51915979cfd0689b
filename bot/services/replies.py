"""Answering a user where they asked: at the response_url of what they did, else by DM."""

from __future__ import annotations

from typing import Any

from bot.services.ports import Notifier


class Replies:
    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier

    def reply(
        self,
        user: str,
        response_url: str | None,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        replace: bool = True,
    ) -> None:
        """`replace` the message at the response_url, or add one beside it."""
        self._notifier.reply(user, response_url, text, blocks, replace)
