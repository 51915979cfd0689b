"""How the shell shows emphasis: Slack's own plain-text markers, or ANSI on a terminal.

Piped output and files get `PLAIN`, which never emits an escape code; a colour terminal
gets `ANSI`. The renderer only calls these methods, so the choice is made once.
"""

from __future__ import annotations

from dataclasses import dataclass

_RESET = "\x1b[0m"
_CODES = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "strike": "9",
    "code": "36",
    "primary": "1;32",
    "danger": "1;31",
    "heading": "1;4",
}


@dataclass(frozen=True)
class Style:
    ansi: bool

    def _wrap(self, kind: str, text: str, marker: str = "") -> str:
        if self.ansi:
            return f"\x1b[{_CODES[kind]}m{text}{_RESET}"
        return f"{marker}{text}{marker}"

    def bold(self, text: str) -> str:
        return self._wrap("bold", text, "*")

    def italic(self, text: str) -> str:
        return self._wrap("italic", text, "_")

    def strike(self, text: str) -> str:
        return self._wrap("strike", text, "~")

    def code(self, text: str) -> str:
        return self._wrap("code", text, "`")

    def label(self, text: str) -> str:
        """A field's label, already set apart by its colon: bold only where that is free."""
        return self._wrap("bold", text) if self.ansi else text

    def dim(self, text: str) -> str:
        return self._wrap("dim", text)

    def heading(self, text: str) -> str:
        return self._wrap("heading", text) if self.ansi else f"== {text} =="

    def button(self, text: str, style: str | None) -> str:
        if self.ansi and style in ("primary", "danger"):
            return self._wrap(style, text)
        return text


PLAIN = Style(ansi=False)
ANSI = Style(ansi=True)
