"""How counted things are said: one rule for every message that puts a number before a
noun ("1 partition", "2 partitions", "1 copy", "3 copies")."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

_IRREGULAR = {"copy": "copies", "GPU": "GPUs"}


def plural(noun: str) -> str:
    return _IRREGULAR.get(noun, noun + "s")


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, singular for one and plural otherwise (0 partitions, 1 partition)."""
    return f"{n} {noun if n == 1 else plural(noun)}"


def percent(fraction: float) -> str:
    """A fraction as a whole percentage, halves rounded up: every place that shows the
    same figure (the card's text, the chart, the CLI) shows the same digits."""
    hundredths = Decimal(repr(fraction)) * 100
    return f"{hundredths.quantize(Decimal(1), rounding=ROUND_HALF_UP)}%"
