"""The cost chart's figures agree with the comparison they draw (no I/O, no plotting)."""

from __future__ import annotations

import pytest

from bot.domain.comparison import OptionKind, break_even
from bot.domain.cost_chart import cost_chart
from bot.domain.market import HourlyPrice
from bot.domain.request import Environment, Workload
from tests.unit.test_comparison import CB, OD, SPOT, SRC, TP, market, quote, req

HOURS = 2 * 72  # instance-hours of req(): 2 instances for 3 days


def test_each_eligible_option_is_a_line_through_its_quoted_total() -> None:
    q = quote(req(environment=Environment.EC2, interruptible=True, utilization_pct=40))
    chart = cost_chart(q)
    eligible = [o for o in q.options if o.eligible]
    assert [line.kind for line in chart.lines] == [o.kind for o in eligible]
    assert OptionKind.TRAINING_PLAN not in [line.kind for line in chart.lines]  # EC2 work
    for option, line in zip(eligible, chart.lines, strict=True):
        # At the request's utilisation each line is what the comparison quoted.
        assert line.cost_at(0.4) == pytest.approx(option.total_usd, abs=0.01)
        # At 100% it is the most the option can cost at today's prices (Spot's limit, the
        # On-Demand price, is not a line: it is what the spending limits go by).
        if option.kind is not OptionKind.SPOT:
            assert line.at_full == pytest.approx(option.most_usd, abs=0.01)
    lines = {line.kind: line for line in chart.lines}
    assert lines[OptionKind.ON_DEMAND].at_zero == 0.0
    assert lines[OptionKind.ON_DEMAND].at_full == pytest.approx(OD * HOURS)
    assert lines[OptionKind.SPOT].at_full == pytest.approx(SPOT * HOURS)
    assert q.option(OptionKind.SPOT).most_usd == pytest.approx(OD * HOURS)
    assert lines[OptionKind.CAPACITY_BLOCK].flat
    assert lines[OptionKind.CAPACITY_BLOCK].at_zero == pytest.approx(CB * HOURS, abs=0.01)
    assert chart.expected_utilization == 0.4


def test_the_block_and_on_demand_cross_at_the_comparisons_break_even() -> None:
    q = quote(req(environment=Environment.EC2, utilization_pct=90))
    chart = cost_chart(q)
    block = q.option(OptionKind.CAPACITY_BLOCK)
    point = next(
        b
        for b in chart.break_evens
        if (b.reserved, b.against) == (OptionKind.CAPACITY_BLOCK, OptionKind.ON_DEMAND)
    )
    assert block.break_even_utilization is not None and block.total_usd is not None
    assert point.utilization == pytest.approx(block.break_even_utilization, abs=1e-4)
    assert point.utilization == pytest.approx(break_even(block.total_usd, OD, q.request))
    assert point.utilization == pytest.approx(CB / OD, abs=1e-4)  # the article's 63%
    assert point.usd == block.total_usd
    # The comparison's own sentence names the same point.
    assert f"breaks even with On-Demand at {point.utilization:.0%}" in " ".join(
        q.recommendation.reasons
    )


def test_a_training_plan_crosses_sagemaker_on_demand_at_its_break_even() -> None:
    r = req(environment=Environment.SAGEMAKER, workload=Workload.TRAINING, utilization_pct=70)
    sagemaker = HourlyPrice(usd_per_hour=OD * 1.2, source=SRC)
    q = quote(r, market(r, sagemaker_on_demand=sagemaker))
    plan = q.option(OptionKind.TRAINING_PLAN)
    point = next(b for b in cost_chart(q).break_evens if b.reserved is OptionKind.TRAINING_PLAN)
    assert point.against is OptionKind.ON_DEMAND
    assert plan.break_even_utilization is not None
    assert point.utilization == pytest.approx(plan.break_even_utilization, abs=1e-4)
    assert point.utilization == pytest.approx(TP / (OD * 1.2), abs=1e-4)


def test_an_on_demand_reservation_meets_on_demand_at_full_use() -> None:
    q = quote(req(environment=Environment.EC2))
    points = [
        b for b in cost_chart(q).break_evens if b.reserved is OptionKind.ON_DEMAND_RESERVATION
    ]
    assert [(b.against, round(b.utilization, 6)) for b in points] == [(OptionKind.ON_DEMAND, 1.0)]


def test_spot_crossings_are_marked_and_points_are_in_order() -> None:
    q = quote(req(environment=Environment.EC2, interruptible=True))
    chart = cost_chart(q)
    spot = [b for b in chart.break_evens if b.against is OptionKind.SPOT]
    # A block at $34.608/h never beats Spot at $22/h: no point inside 0..100%.
    assert spot == []
    cheap = market(q.request, spot=HourlyPrice(usd_per_hour=50.0, source=SRC))
    chart = cost_chart(quote(q.request, cheap))
    crossing = next(
        b
        for b in chart.break_evens
        if (b.reserved, b.against) == (OptionKind.CAPACITY_BLOCK, OptionKind.SPOT)
    )
    assert crossing.utilization == pytest.approx(CB / 50.0, abs=1e-4)
    assert [b.utilization for b in chart.break_evens] == sorted(
        b.utilization for b in chart.break_evens
    )
    assert all(0 <= b.utilization <= 1 for b in chart.break_evens)


def test_the_recommended_line_is_flagged() -> None:
    q = quote(req(environment=Environment.EC2, utilization_pct=50))
    flagged = [line.kind for line in cost_chart(q).lines if line.recommended]
    assert flagged == [q.recommendation.kind] == [OptionKind.ON_DEMAND]


def test_nothing_possible_is_an_empty_chart() -> None:
    r = req(environment=Environment.EC2)
    q = quote(r, market(r, on_demand=None, spot=None, capacity_blocks=()))
    chart = cost_chart(q)
    assert chart.empty and chart.break_evens == ()
    assert "2x p5.48xlarge, 3d from 2026-12-14 00:00 UTC in us-east-1" in chart.title
