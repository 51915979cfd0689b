"""People as the services see them: telling them about requests, and who is in a group."""

from __future__ import annotations

from typing import Any, Protocol

from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord


class Notifier(Protocol):
    """Answers people where they asked: comparisons and replies (Slack in production,
    the console in the shell)."""

    def quote_ready(self, record: CapacityRecord, response_url: str | None) -> None:
        """Show the requester the comparison with Submit / Cancel (or why quoting
        failed) where they asked: the command's response_url, else a direct message."""
        ...

    def show_quote(self, user: str, response_url: str | None, quote: Quote) -> None:
        """Show a comparison that is not a request (`/gpu quote`)."""
        ...

    def reply(
        self,
        user: str,
        response_url: str | None,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        replace: bool = True,
    ) -> None:
        """Answer a user where they asked (a response_url), else by DM; `replace` the
        message at the response_url, or add one beside it."""
        ...


class GroupDirectory(Protocol):
    def members(self, group_id: str) -> list[str]:
        """User ids in a user group; raises on failure."""
        ...
