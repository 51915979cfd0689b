"""Request ids as people type them."""

from __future__ import annotations


def normalise_id(text: str) -> str:
    """`r12`, `R12` and `12` all name request R12."""
    text = text.strip().upper()
    return text if text.startswith("R") else f"R{text}"
