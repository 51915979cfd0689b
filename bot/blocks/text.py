"""Text helpers: escaping user text for mrkdwn, and short money/time formats."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.domain.request import clean_text

# Slack's mrkdwn treats only these three as control characters: escaping them is what
# stops <!channel>, <@U…> and <https://…|label> from being injected through user text.
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))


def esc(text: str) -> str:
    """User text made inert for mrkdwn."""
    for raw, escaped in _ESCAPES:
        text = text.replace(raw, escaped)
    return text


def user_text_block(label: str, text: str) -> dict[str, Any]:
    """User-typed text on a card as its own plain-text section: no mrkdwn, no emoji
    codes, one line, in quotes, so it cannot draw a line that looks like the bot's own
    (":white_check_mark: *Approved* by ...") or a mention. Escaped as well (Slack reads
    entities in every text), and clipped before escaping so that the escaped text stays
    within the 3,000 characters of a section, whatever it is made of."""
    shown = f"{label} \u201c{clip(clean_text(text), 580)}\u201d"
    return {"type": "section", "text": {"type": "plain_text", "text": esc(shown), "emoji": False}}


def quoted(text: str, limit: int = 500) -> str:
    """User-typed text inside mrkdwn (a DM's text): one line in a code span, where Slack
    reads no formatting, links or mentions; escaped as well, and clipped before escaping."""
    inner = clip(clean_text(text), limit).replace("`", "\u02cb")
    return f"`{esc(inner)}`"


def unescape_slack(text: str) -> str:
    """Undo Slack's own escaping of slash command text (it sends &amp; &lt; &gt;)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.3f}/instance-h"


def when(value: datetime) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC"


def day(value: datetime) -> str:
    return f"{value:%Y-%m-%d}"


def user(user_id: str) -> str:
    """A mention of a Slack user id we validated ourselves (never user-typed text)."""
    return f"<@{user_id}>"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
