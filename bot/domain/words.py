"""How counted things are said: one rule for every message that puts a number before a
noun ("1 partition", "2 partitions", "1 copy", "3 copies")."""

from __future__ import annotations

_IRREGULAR = {"copy": "copies", "GPU": "GPUs"}


def plural(noun: str) -> str:
    return _IRREGULAR.get(noun, noun + "s")


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, singular for one and plural otherwise (0 partitions, 1 partition)."""
    return f"{n} {noun if n == 1 else plural(noun)}"
