"""The quote says what it compares: each reason compares the options it names, every
figure is rounded once (the card, the chart and the CLI show the same digits), a break-even
says what it is against, the recommendation keeps to what can be submitted, and the
chart's labels never cover each other."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.blocks.quote import option_line
from bot.domain.comparison import OptionKind
from bot.domain.cost_chart import cost_chart
from bot.domain.market import HourlyPrice, ReservationKind
from bot.domain.recommendation import Cap, Quote, build_quote, most_usd
from bot.domain.request import Environment, Workload
from bot.domain.words import percent
from tests.unit.test_comparison import NOW, OD, SRC, catalog, market, offering, quote, req

MONEY = r"\$([0-9,]+\.[0-9]{2})"
LABELS = {kind.label: kind for kind in OptionKind}


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def reasons_compare_what_they_name(q: Quote) -> None:
    """The rule: every figure in a reason belongs to the option the reason names."""
    chosen = q.recommended
    for reason in q.recommendation.reasons:
        for a, x, y, b in re.findall(
            rf"([A-Za-z -]+?) costs {MONEY} against {MONEY} for ([A-Za-z -]+?) at", reason
        ):
            first, second = q.option(LABELS[a.strip()]), q.option(LABELS[b.strip()])
            assert (_usd(x), _usd(y)) == (first.total_usd, second.total_usd), reason
            assert chosen is not None and first.kind is chosen.kind, reason
        for name, against, shown in re.findall(
            r"; ([A-Za-z -]+?) breaks even with ([A-Za-z -]+?) at ([0-9]+%)", reason
        ):
            option = q.option(LABELS[name])
            assert option.break_even_utilization is not None
            assert (against, shown) == (
                option.break_even_against,
                percent(option.break_even_utilization),
            ), reason
        assert "Capacity Reservation guarantees" not in reason  # made at the window only
        for name, more in re.findall(
            rf"an? ([A-Za-z -]+?) (?:guarantees the window for|costs) {MONEY} more", reason
        ):
            reserved = q.option(LABELS[name])
            assert chosen is not None and reserved.total_usd and chosen.total_usd is not None
            assert _usd(more) == pytest.approx(reserved.total_usd - chosen.total_usd, abs=0.01)
            assert _usd(more) > 0, reason  # a guarantee for nothing more would be the pick


@settings(max_examples=250, deadline=None)
@given(
    util=st.integers(1, 100),
    count=st.sampled_from([1, 2, 8, 64, 65]),
    interruptible=st.booleans(),
    environment=st.sampled_from([Environment.EC2, None]),
    workload=st.sampled_from([Workload.TRAINING, Workload.EVENT]),
    cb_ratio=st.one_of(st.none(), st.floats(0.3, 1.4)),
    spot_ratio=st.floats(0.2, 1.1),
    sagemaker_ratio=st.one_of(st.none(), st.floats(0.9, 1.4)),
)
def test_each_reason_compares_what_it_names(
    util: int,
    count: int,
    interruptible: bool,
    environment: Environment | None,
    workload: Workload,
    cb_ratio: float | None,
    spot_ratio: float,
    sagemaker_ratio: float | None,
) -> None:
    r = req(
        utilization_pct=util,
        count=count,
        interruptible=interruptible,
        environment=environment,
        workload=workload,
        start=NOW + timedelta(weeks=4),
    )
    blocks = (
        () if cb_ratio is None else (offering(ReservationKind.CAPACITY_BLOCK, r, OD * cb_ratio),)
    )
    sagemaker = (
        None
        if sagemaker_ratio is None
        else HourlyPrice(usd_per_hour=OD * sagemaker_ratio, source=SRC)
    )
    snap = market(
        r,
        spot=HourlyPrice(usd_per_hour=OD * spot_ratio, source=SRC),
        capacity_blocks=blocks,
        sagemaker_on_demand=sagemaker,
    )
    q = quote(r, snap)
    reasons_compare_what_they_name(q)
    # One rounding: the card's option line, the reasons and the chart give the same digits.
    chart = cost_chart(q)
    for option in q.options:
        if option.eligible and option.break_even_utilization is not None:
            shown = percent(option.break_even_utilization)
            assert f"break-even {shown}" in option_line(option, False)
            if option.break_even_utilization <= 1:
                point = next(
                    b
                    for b in chart.break_evens
                    if b.reserved is option.kind and b.against is OptionKind.ON_DEMAND
                )
                assert point.label == shown
    # No label covers another, and all stay inside the plot.
    labels = chart.labels()
    assert all(label.inside for label in labels)
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :] if a.overlaps(b)]


def test_spot_is_compared_with_on_demand_not_with_a_reservation() -> None:
    # Interruptible work without a block: Spot against On-Demand, the option it replaces.
    r = req(instance_type="g5.xlarge", environment=Environment.EC2, interruptible=True)
    q = quote(r, market(r, capacity_blocks=(), spot=HourlyPrice(usd_per_hour=10.0, source=SRC)))
    assert q.recommendation.kind is OptionKind.SPOT
    text = " ".join(q.recommendation.reasons)
    assert "against" in text and "for On-Demand at" in text
    assert "for On-Demand Capacity Reservation at" not in text
    reasons_compare_what_they_name(q)


def test_an_odcr_that_costs_nothing_more_is_the_pick_and_says_when_it_is_made() -> None:
    # 65 instances: no Capacity Block; at full use an ODCR costs what On-Demand does.
    r = req(count=65, environment=Environment.EC2)
    q = quote(r, market(r, capacity_blocks=()))
    assert q.recommendation.kind is OptionKind.ON_DEMAND_RESERVATION
    said = " ".join(q.recommendation.reasons)
    assert "$0.00 more" not in said
    assert "guarantee" not in said  # nothing is held before the window opens
    assert "made only when the window opens" in said
    assert "AWS may refuse it then for lack of capacity" in said
    odcr = q.option(OptionKind.ON_DEMAND_RESERVATION)
    assert not odcr.guaranteed and "may refuse it" in odcr.reasons[0]
    reasons_compare_what_they_name(q)


def test_a_break_even_at_a_half_is_rounded_once_the_same_everywhere() -> None:
    # 289.87 / 1054.08 = 27.4998...%: 27%, whichever figure shows it.
    assert percent(289.87 / 1054.08) == "27%"
    assert percent(0.275) == "28%" and percent(0.625) == "63%" and percent(0.005) == "1%"
    r = req(count=1, duration_hours=48, environment=Environment.EC2, utilization_pct=100)
    block = offering(ReservationKind.CAPACITY_BLOCK, r, 0.0)
    block = block.model_copy(update={"upfront_usd": 289.87})
    hourly = 1054.08 / 48
    q = quote(
        r,
        market(r, on_demand=HourlyPrice(usd_per_hour=hourly, source=SRC), capacity_blocks=(block,)),
    )
    option = q.option(OptionKind.CAPACITY_BLOCK)
    assert "break-even 27%" in option_line(option, True)
    assert "breaks even with On-Demand at 27%" in " ".join(q.recommendation.reasons)
    (point,) = [b for b in cost_chart(q).break_evens if b.reserved is OptionKind.CAPACITY_BLOCK]
    assert point.label == "27%"
    assert "27%" in [label.text for label in cost_chart(q).labels()]


def test_a_break_even_against_sagemaker_on_demand_says_so_and_is_drawn_on_its_line() -> None:
    # No environment: the On-Demand option is EC2's; the plan is compared with SageMaker's.
    r = req(utilization_pct=90)
    sagemaker = HourlyPrice(usd_per_hour=OD * 1.25, source=SRC)
    q = quote(r, market(r, sagemaker_on_demand=sagemaker))
    plan = q.option(OptionKind.TRAINING_PLAN)
    assert plan.break_even_against == "SageMaker On-Demand"
    assert plan.break_even_utilization is not None
    shown = percent(plan.break_even_utilization)
    assert f"break-even {shown} against SageMaker On-Demand" in option_line(plan, True)
    assert f"breaks even with SageMaker On-Demand at {shown}" in " ".join(q.recommendation.reasons)
    chart = cost_chart(q)
    (reference,) = [line for line in chart.lines if line.reference]
    assert reference.label == "SageMaker On-Demand"
    assert reference.at_full == pytest.approx(OD * 1.25 * r.instance_hours)
    (point,) = [b for b in chart.break_evens if b.reserved is OptionKind.TRAINING_PLAN]
    assert point.against_name == "SageMaker On-Demand" and point.label == shown
    assert reference.cost_at(point.utilization) == pytest.approx(point.usd, abs=0.01)
    # The block is EC2's and is compared with the quote's own (EC2) On-Demand.
    block = q.option(OptionKind.CAPACITY_BLOCK)
    assert block.break_even_against == "On-Demand"


def test_the_chart_marks_each_options_cost_at_the_expected_utilisation() -> None:
    q = quote(req(environment=Environment.EC2, utilization_pct=100))
    chart = cost_chart(q)
    costs = {line.kind: usd for line, usd in chart.costs_at_expected()}
    for option in q.options:
        if option.eligible:
            assert costs[option.kind] == pytest.approx(option.total_usd, abs=0.01)
    texts = [label.text for label in chart.labels()]
    assert "expected 100%" in texts
    assert sum(t.startswith("$") for t in texts) == len(costs)


# --- the limit for one request ------------------------------------------------------------

LIMIT = 6000.0


def capped(q_request, snap=None):  # type: ignore[no-untyped-def]
    cap = Cap(lambda o: most_usd(o) <= LIMIT, LIMIT)
    return build_quote(q_request, snap or market(q_request), catalog, NOW, cap)


def test_the_recommendation_keeps_to_what_the_limit_lets_be_submitted() -> None:
    r = req(environment=Environment.EC2, utilization_pct=50)
    assert quote(r).recommendation.kind is OptionKind.ON_DEMAND  # $3,962.88, up to $7,925.76
    q = capped(r)
    assert q.recommendation.kind is OptionKind.CAPACITY_BLOCK  # $4,983.55 fits
    said = " ".join(q.recommendation.reasons)
    assert "On-Demand is left out: it can cost up to $7,925.76" in said
    assert "above the $6,000.00 limit for one request" in said
    reasons_compare_what_they_name(q)


def test_when_every_option_is_over_the_limit_the_pick_is_made_among_all() -> None:
    r = req(count=8, environment=Environment.EC2)
    q = capped(r)
    assert q.recommendation.kind is not None
    assert "left out" not in " ".join(q.recommendation.reasons)
