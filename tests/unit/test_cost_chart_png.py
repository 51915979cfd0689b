"""The cost chart drawn as a PNG (matplotlib, Agg)."""

from __future__ import annotations

import json
import struct
import sys

import pytest

from bot.adapters.charts.png import (
    PNG_MAGIC,
    ChartFailed,
    chart_from_json,
    chart_json,
    render_png,
    render_png_apart,
)
from bot.domain.cost_chart import cost_chart
from bot.domain.request import Environment
from tests.unit.test_comparison import market, quote, req


def size(png: bytes) -> tuple[int, int]:
    assert png.startswith(PNG_MAGIC)
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_a_quote_is_drawn() -> None:
    chart = cost_chart(quote(req(environment=Environment.EC2, utilization_pct=70)))
    assert chart.lines and chart.break_evens
    assert size(render_png(chart)) == (800, 450)


def test_a_quote_with_nothing_possible_is_still_a_picture() -> None:
    r = req(environment=Environment.EC2)
    chart = cost_chart(quote(r, market(r, on_demand=None, spot=None, capacity_blocks=())))
    assert chart.empty
    assert size(render_png(chart)) == (800, 450)


def test_a_child_process_draws_the_same_chart() -> None:
    chart = cost_chart(quote(req(environment=Environment.EC2, interruptible=True)))
    assert chart_from_json(json.loads(json.dumps(chart_json(chart)))) == chart
    assert size(render_png_apart(chart)) == (800, 450)


def test_a_child_that_draws_nothing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    chart = cost_chart(quote(req()))
    with pytest.raises(ChartFailed, match="exited 1"):
        render_png_apart(chart)
