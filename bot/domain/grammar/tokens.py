"""Splitting request text into tokens: whitespace outside double quotes."""

from __future__ import annotations

from bot.domain.grammar.vocabulary import (
    CLOSE_QUOTES,
    QUOTES,
    RequestSyntaxError,
)


def tokenize(text: str) -> list[str]:
    """Split on whitespace outside double quotes (straight or curly); drop the quotes."""
    if not any(quote in text for quote in QUOTES):
        return text.split()  # the usual command: nothing quoted
    tokens: list[str] = []
    current: list[str] = []
    in_token = False
    closing: str | None = None
    chars = iter(text)
    for ch in chars:
        if closing is not None:
            if ch == "\\" and closing == '"':
                nxt = next(chars, None)
                if nxt is None:
                    break
                current.append(nxt)
            elif ch == closing or (closing != '"' and ch in CLOSE_QUOTES):
                closing = None
            else:
                current.append(ch)
        elif ch in QUOTES:
            closing = QUOTES[ch]
            in_token = True
        elif ch.isspace():
            if in_token:
                tokens.append("".join(current))
                current, in_token = [], False
        else:
            current.append(ch)
            in_token = True
    if closing is not None:
        raise RequestSyntaxError("a quote is not closed", accepted='reason="text in double quotes"')
    if in_token:
        tokens.append("".join(current))
    return tokens
