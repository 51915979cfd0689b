"""Text helpers: escaping user text for mrkdwn, and short money/time formats."""

from __future__ import annotations

from datetime import datetime

# Slack's mrkdwn treats only these three as control characters: escaping them is what
# stops <!channel>, <@U…> and <https://…|label> from being injected through user text.
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))


def esc(text: str) -> str:
    """User text made inert for mrkdwn."""
    for raw, escaped in _ESCAPES:
        text = text.replace(raw, escaped)
    return text


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
