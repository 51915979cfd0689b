"""Drawing a chart: the domain's figures in, image bytes out."""

from __future__ import annotations

from typing import Protocol

from bot.domain.cost_chart import CostChart


class ChartRenderer(Protocol):
    def __call__(self, chart: CostChart) -> bytes:
        """`chart` as a PNG."""
        ...
