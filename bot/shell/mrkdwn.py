"""Slack mrkdwn to terminal text: mentions and links resolved, entities unescaped,
emphasis through a `Style`. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bot.shell.style import Style

# C0/C1 controls other than tab and newline: user text must not drive the terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANGLED = re.compile(r"<([^<>\n]+)>")
_CODE = re.compile(r"(`[^`\n]+`)")
_SPECIAL = {"channel": "@channel", "here": "@here", "everyone": "@everyone"}


def _emphasis(marker: str) -> re.Pattern[str]:
    m = re.escape(marker)
    return re.compile(rf"(?<![\w{m}]){m}(?!\s)([^{m}\n]+?)(?<!\s){m}(?![\w{m}])")


_BOLD, _ITALIC, _STRIKE = _emphasis("*"), _emphasis("_"), _emphasis("~")


@dataclass(frozen=True)
class Names:
    """Display names for the ids that mrkdwn mentions carry."""

    users: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)

    def user(self, user_id: str) -> str:
        return self.users.get(user_id, user_id)

    def channel(self, channel_id: str) -> str:
        return self.channels.get(channel_id, channel_id)


def printable(text: str) -> str:
    return _CONTROLS.sub("", text)


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def to_text(mrkdwn: str, style: Style, names: Names) -> str:
    """Slack renders `<…>` as mentions and links and `&lt;` as a literal `<`: so does this
    (escaped user text stays literal, real mentions become @names)."""
    linked = _ANGLED.sub(lambda m: _angled(m.group(1), names), printable(mrkdwn))
    return unescape(_emphasise(linked, style) if style.ansi else linked)


def _angled(inner: str, names: Names) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return "@" + names.user(target[1:])
    if target.startswith("#"):
        return "#" + (label or names.channel(target[1:]))
    if target.startswith("!"):
        keyword = target[1:].split("^", 1)[0]
        return label or _SPECIAL.get(keyword, "@" + keyword)
    return f"{label} ({target})" if label and label != target else target


def _emphasise(text: str, style: Style) -> str:
    """Plain text already shows Slack's markers; a terminal gets bold, italic and so on.
    Code spans are left alone inside."""
    parts = _CODE.split(text)
    for i, part in enumerate(parts):
        if i % 2:
            parts[i] = style.code(part[1:-1])
        else:
            for pattern, apply in _EMPHASES:
                part = pattern.sub(lambda m, apply=apply: apply(style, m.group(1)), part)
            parts[i] = part
    return "".join(parts)


_EMPHASES: tuple[tuple[re.Pattern[str], Callable[[Style, str], str]], ...] = (
    (_BOLD, Style.bold),
    (_ITALIC, Style.italic),
    (_STRIKE, Style.strike),
)
