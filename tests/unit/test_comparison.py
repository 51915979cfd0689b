"""The comparison rules and arithmetic, on hand-built market snapshots (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain import offering_rules as rules
from bot.domain.catalog import default_catalog
from bot.domain.comparison import OptionKind, assess_options, break_even
from bot.domain.market import (
    HourlyPrice,
    MarketSnapshot,
    Offering,
    OfferingPart,
    Origin,
    PriceSource,
    ReservationKind,
)
from bot.domain.recommendation import build_quote
from bot.domain.request import CapacityRequest, Environment, Workload

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
START = datetime(2026, 12, 14, tzinfo=UTC)
OD, CB, TP, SPOT = 55.04, 34.608, 15.136, 22.0
SRC = PriceSource(origin=Origin.SANDBOX, detail="test", as_of=NOW)
catalog = default_catalog()


def req(**kw: object) -> CapacityRequest:
    base: dict[str, object] = {
        "count": 2,
        "instance_type": "p5.48xlarge",
        "duration_hours": 72,
        "start": START,
        "region": "us-east-1",
    }
    base.update(kw)
    return CapacityRequest.model_validate(base)


def offering(kind: ReservationKind, r: CapacityRequest, hourly: float, **kw: object) -> Offering:
    hours = (
        rules.capacity_block_duration_for(r.duration_hours)
        if kind is ReservationKind.CAPACITY_BLOCK
        else rules.training_plan_duration_for(r.duration_hours)
    )
    assert hours is not None
    count = int(kw.pop("count", r.count))  # type: ignore[call-overload]
    start = kw.pop("start", r.start)
    assert isinstance(start, datetime)
    end = start + timedelta(hours=hours)
    return Offering(
        kind=kind,
        offering_id=str(kw.pop("offering_id", f"{kind.value}-1")),
        instance_type=r.instance_type,
        count=count,
        start=start,
        end=end,
        duration_hours=hours,
        upfront_usd=round(hourly * hours * count, 2),
        parts=(
            OfferingPart(
                instance_type=r.instance_type, count=count, zone="a", start=start, end=end
            ),
        ),
        source=SRC,
    )


def market(r: CapacityRequest, **kw: object) -> MarketSnapshot:
    snap: dict[str, object] = {
        "on_demand": HourlyPrice(usd_per_hour=OD, source=SRC),
        "spot": HourlyPrice(usd_per_hour=SPOT, source=SRC, zone="us-east-1b"),
        "capacity_blocks": (offering(ReservationKind.CAPACITY_BLOCK, r, CB),),
        "training_plans": (offering(ReservationKind.TRAINING_PLAN, r, TP),),
    }
    snap.update(kw)
    return MarketSnapshot.model_validate(snap)


def options(r: CapacityRequest, snap: MarketSnapshot | None = None) -> dict[OptionKind, object]:
    return {o.kind: o for o in assess_options(r, snap or market(r), catalog, NOW)}


def opt(r: CapacityRequest, kind: OptionKind, snap: MarketSnapshot | None = None):  # type: ignore[no-untyped-def]
    return next(o for o in assess_options(r, snap or market(r), catalog, NOW) if o.kind is kind)


# --- every option, every time ---------------------------------------------------------


def test_all_five_options_are_always_listed() -> None:
    kinds = [o.kind for o in assess_options(req(), market(req()), catalog, NOW)]
    assert kinds == list(OptionKind)


# --- Capacity Block durations: by day to 14, then 7-day steps to 182 ------------------


@pytest.mark.parametrize(
    ("days", "billed_days"),
    [(1, 1), (13, 13), (14, 14), (15, 21), (21, 21), (22, 28), (182, 182)],
)
def test_capacity_block_duration_steps(days: int, billed_days: int) -> None:
    r = req(duration_hours=days * 24)
    o = opt(r, OptionKind.CAPACITY_BLOCK)
    assert o.eligible
    assert o.billed_hours == billed_days * 24
    if billed_days != days:
        assert any(f"billed as {billed_days} days" in reason for reason in o.reasons)


def test_capacity_block_longer_than_182_days_is_barred() -> None:
    o = opt(req(duration_hours=183 * 24), OptionKind.CAPACITY_BLOCK, market(req()))
    assert not o.eligible
    assert "at most 182 days" in o.reasons[0]


def test_partial_days_round_up() -> None:
    o = opt(req(duration_hours=36), OptionKind.CAPACITY_BLOCK)
    assert o.billed_hours == 48
    assert "36 hours is billed as 2 days" in " ".join(o.reasons)


@pytest.mark.parametrize(
    ("hours", "valid"),
    [
        (24, True),
        (13 * 24, True),
        (14 * 24, True),
        (15 * 24, False),
        (21 * 24, True),
        (36, False),
        (182 * 24, True),
        (189 * 24, False),
    ],
)
def test_capacity_block_duration_validity(hours: int, valid: bool) -> None:
    assert rules.capacity_block_duration_valid(hours) is valid


# --- Capacity Block size and horizon ---------------------------------------------------


def test_64_instances_fit_one_block_65_do_not() -> None:
    assert opt(req(count=64), OptionKind.CAPACITY_BLOCK).eligible
    o = opt(req(count=65), OptionKind.CAPACITY_BLOCK)
    assert not o.eligible
    assert "at most 64 instances" in o.reasons[0]


def test_eight_weeks_ahead_is_the_limit() -> None:
    at_limit = NOW + timedelta(weeks=8)
    assert opt(req(start=at_limit), OptionKind.CAPACITY_BLOCK).eligible
    o = opt(req(start=at_limit + timedelta(minutes=1)), OptionKind.CAPACITY_BLOCK)
    assert not o.eligible
    assert "at most 8 weeks ahead" in o.reasons[0]
    assert "booked from 2026-11-30" in o.reasons[0]


# --- environments ----------------------------------------------------------------------


def test_capacity_blocks_are_ec2_only() -> None:
    o = opt(req(environment=Environment.SAGEMAKER), OptionKind.CAPACITY_BLOCK)
    assert not o.eligible
    assert "for EC2" in o.reasons[0]
    assert opt(req(environment=Environment.EC2), OptionKind.CAPACITY_BLOCK).eligible


def test_training_plans_are_sagemaker_only() -> None:
    o = opt(req(environment=Environment.EC2), OptionKind.TRAINING_PLAN)
    assert not o.eligible
    assert "SageMaker" in o.reasons[0]
    tp = opt(req(environment=Environment.SAGEMAKER), OptionKind.TRAINING_PLAN)
    assert tp.eligible
    assert opt(req(), OptionKind.TRAINING_PLAN).eligible  # environment not given: either


def test_on_demand_reservation_is_ec2_only() -> None:
    assert not opt(
        req(environment=Environment.SAGEMAKER), OptionKind.ON_DEMAND_RESERVATION
    ).eligible


@pytest.mark.parametrize(("count", "billed"), [(1, 1), (3, 4), (4, 4), (5, 8), (33, 64)])
def test_training_plan_counts_round_up(count: int, billed: int) -> None:
    r = req(count=count)
    snap = market(r, training_plans=(offering(ReservationKind.TRAINING_PLAN, r, TP, count=billed),))
    o = opt(r, OptionKind.TRAINING_PLAN, snap)
    assert o.eligible
    assert o.billed_instances == billed
    if billed != count:
        assert f"{count} is billed as {billed}" in " ".join(o.reasons)


def test_training_plan_over_64_instances_is_barred() -> None:
    o = opt(req(count=65), OptionKind.TRAINING_PLAN)
    assert not o.eligible
    assert "at most 64" in o.reasons[0]


def test_family_without_capacity_blocks_says_so() -> None:
    r = req(instance_type="g5.12xlarge")
    o = opt(r, OptionKind.CAPACITY_BLOCK, market(r, capacity_blocks=()))
    assert not o.eligible
    assert "not offered for g5.12xlarge" in o.reasons[0]


def test_sold_out_says_so() -> None:
    o = opt(req(), OptionKind.CAPACITY_BLOCK, market(req(), capacity_blocks=()))
    assert not o.eligible
    assert "sold out" in o.reasons[0]


def test_an_aws_error_is_the_reason() -> None:
    snap = market(
        req(),
        capacity_blocks=(),
        errors={"capacity-block": "AWS said: CapacityBlockDescribeLimitExceeded"},
    )
    o = opt(req(), OptionKind.CAPACITY_BLOCK, snap)
    assert o.reasons == ["AWS said: CapacityBlockDescribeLimitExceeded"]


# --- Spot ------------------------------------------------------------------------------


def test_spot_only_for_interruptible_work() -> None:
    o = opt(req(), OptionKind.SPOT)
    assert not o.eligible
    assert "interruptible" in o.reasons[0]
    assert opt(req(interruptible=True), OptionKind.SPOT).eligible


def test_no_spot_for_sagemaker_endpoints() -> None:
    r = req(interruptible=True, environment=Environment.SAGEMAKER, workload=Workload.INFERENCE)
    assert not opt(r, OptionKind.SPOT).eligible


# --- arithmetic ------------------------------------------------------------------------


@pytest.mark.parametrize("util", [100, 80, 50, 1])
def test_flexible_costs_scale_with_utilisation_reserved_do_not(util: int) -> None:
    r = req(utilization_pct=util, interruptible=True)
    o = options(r)
    hours = 2 * 72
    assert o[OptionKind.ON_DEMAND].total_usd == pytest.approx(OD * hours * util / 100, abs=0.01)
    assert o[OptionKind.SPOT].total_usd == pytest.approx(SPOT * hours * util / 100, abs=0.01)
    assert o[OptionKind.CAPACITY_BLOCK].total_usd == pytest.approx(CB * hours, abs=0.01)
    assert o[OptionKind.ON_DEMAND_RESERVATION].total_usd == pytest.approx(OD * hours, abs=0.01)


def test_the_article_example_break_even() -> None:
    o = opt(req(), OptionKind.CAPACITY_BLOCK)
    assert o.hourly_usd == pytest.approx(34.608)
    assert o.break_even_utilization == pytest.approx(34.608 / 55.04, abs=1e-4)  # about 63%
    assert opt(req(), OptionKind.ON_DEMAND_RESERVATION).break_even_utilization == 1.0


def test_break_even_counts_the_rounded_up_days() -> None:
    r = req(duration_hours=36)
    o = opt(r, OptionKind.CAPACITY_BLOCK)
    # A 2-day block against 36 hours of On-Demand.
    assert o.break_even_utilization == pytest.approx(CB * 48 / (OD * 36), abs=1e-4)
    assert break_even(CB * 48 * 2, OD, r) == pytest.approx(CB * 48 / (OD * 36))


# --- recommendation --------------------------------------------------------------------


def quote(r: CapacityRequest, snap: MarketSnapshot | None = None, now: datetime = NOW):  # type: ignore[no-untyped-def]
    return build_quote(r, snap or market(r), catalog, now)


def test_cheaper_reservation_wins_at_high_utilisation() -> None:
    q = quote(req(environment=Environment.EC2, utilization_pct=90))
    assert q.recommendation.kind is OptionKind.CAPACITY_BLOCK
    assert "breaks even with On-Demand at 63%" in " ".join(q.recommendation.reasons)


def test_on_demand_wins_below_break_even_for_flexible_work() -> None:
    q = quote(req(environment=Environment.EC2, utilization_pct=50))
    assert q.recommendation.kind is OptionKind.ON_DEMAND
    text = " ".join(q.recommendation.reasons)
    assert "least constrained" in text
    assert "guarantees the window" in text


def test_interruptible_work_gets_spot() -> None:
    q = quote(req(environment=Environment.EC2, interruptible=True, utilization_pct=50))
    assert q.recommendation.kind is OptionKind.SPOT


def test_critical_timing_moves_to_a_reservation_even_when_dearer() -> None:
    r = req(
        environment=Environment.EC2,
        workload=Workload.EVENT,
        utilization_pct=40,
        start=NOW + timedelta(weeks=4),
    )
    q = quote(r)
    assert q.recommendation.kind is OptionKind.CAPACITY_BLOCK
    assert "availability is critical" in q.recommendation.reasons[0]
    assert any("more than On-Demand" in w for w in q.recommendation.warnings)


def test_sagemaker_inference_gets_a_training_plan() -> None:
    r = req(
        environment=Environment.SAGEMAKER,
        workload=Workload.INFERENCE,
        start=NOW + timedelta(weeks=4),
    )
    assert quote(r).recommendation.kind is OptionKind.TRAINING_PLAN


def test_launch_less_than_three_weeks_away_is_warned() -> None:
    soon = quote(req(workload=Workload.INFERENCE, start=NOW + timedelta(days=20)))
    assert any("3 weeks ahead" in w for w in soon.recommendation.warnings)
    later = quote(req(workload=Workload.INFERENCE, start=NOW + timedelta(days=21)))
    assert not any("3 weeks ahead" in w for w in later.recommendation.warnings)
    training = quote(req(start=NOW + timedelta(days=2)))
    assert not any("3 weeks ahead" in w for w in training.recommendation.warnings)


def test_without_cb_or_plan_a_critical_event_falls_back_to_odcr_with_the_caveat() -> None:
    r = req(instance_type="g5.12xlarge", environment=Environment.EC2, workload=Workload.EVENT)
    snap = market(r, capacity_blocks=(), training_plans=())
    q = quote(r, snap)
    assert q.recommendation.kind is OptionKind.ON_DEMAND_RESERVATION
    assert "full On-Demand rate" in " ".join(q.recommendation.reasons)


def test_nothing_possible_names_every_bar() -> None:
    r = req(count=65, environment=Environment.SAGEMAKER)
    snap = market(
        r, on_demand=None, sagemaker_on_demand=None, capacity_blocks=(), training_plans=()
    )
    q = quote(r, snap)
    assert q.recommendation.kind is None
    assert "Capacity Block" in q.recommendation.reasons[0]


def test_offering_closest_to_the_wanted_start_is_chosen() -> None:
    r = req(environment=Environment.EC2)
    far = offering(
        ReservationKind.CAPACITY_BLOCK,
        r,
        30.0,
        offering_id="far",
        start=START + timedelta(hours=35),
    )
    near = offering(
        ReservationKind.CAPACITY_BLOCK,
        r,
        CB,
        offering_id="near",
        start=START + timedelta(hours=11, minutes=30),
    )
    o = opt(r, OptionKind.CAPACITY_BLOCK, market(r, capacity_blocks=(far, near)))
    assert o.offering is not None and o.offering.offering_id == "near"
    assert [a.offering_id for a in o.alternatives] == ["far"]
    assert "starts 2026-12-14 11:30 UTC" in " ".join(o.reasons)


def test_estimated_prices_are_flagged_in_the_recommendation() -> None:
    est = PriceSource(origin=Origin.CATALOG, detail="third-party", as_of=NOW, estimate=True)
    r = req(environment=Environment.EC2, utilization_pct=30)
    q = quote(r, market(r, on_demand=HourlyPrice(usd_per_hour=OD, source=est)))
    assert q.recommendation.kind is OptionKind.ON_DEMAND
    assert any("estimate" in w for w in q.recommendation.warnings)


def test_unspecified_environment_says_what_the_pick_assumes() -> None:
    q = quote(req(utilization_pct=90))
    assert q.recommendation.kind is OptionKind.TRAINING_PLAN
    caveat = q.recommendation.reasons[-1]
    assert "assumes the work runs on SageMaker" in caveat
    assert "otherwise the best is Capacity Block" in caveat


def test_offering_covering_most_of_the_window_wins_over_an_earlier_one() -> None:
    r = req(environment=Environment.EC2)
    early = offering(
        ReservationKind.CAPACITY_BLOCK,
        r,
        CB,
        offering_id="early",
        start=START - timedelta(hours=12, minutes=30),
    )
    late = offering(
        ReservationKind.CAPACITY_BLOCK,
        r,
        CB,
        offering_id="late",
        start=START + timedelta(hours=11, minutes=30),
    )
    o = opt(r, OptionKind.CAPACITY_BLOCK, market(r, capacity_blocks=(early, late)))
    # early covers 59.5 h of the 72 asked, late 60.5 h.
    assert o.offering is not None and o.offering.offering_id == "late"


# --- properties of the recommendation ------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(
    util=st.integers(1, 100),
    hours=st.integers(1, 40 * 24),
    count=st.integers(1, 64),
    workload=st.sampled_from(Workload),
    od=st.floats(1, 200),
    cb_ratio=st.floats(0.2, 1.5),
)
def test_recommendation_follows_cost_unless_timing_is_critical(
    util: int, hours: int, count: int, workload: Workload, od: float, cb_ratio: float
) -> None:
    r = req(
        utilization_pct=util,
        duration_hours=hours,
        count=count,
        workload=workload,
        environment=Environment.EC2,
        start=NOW + timedelta(weeks=4),
    )
    snap = market(
        r,
        on_demand=HourlyPrice(usd_per_hour=od, source=SRC),
        capacity_blocks=(offering(ReservationKind.CAPACITY_BLOCK, r, od * cb_ratio),),
    )
    q = quote(r, snap)
    cb = q.option(OptionKind.CAPACITY_BLOCK)
    ondemand = q.option(OptionKind.ON_DEMAND)
    assert cb.total_usd is not None and ondemand.total_usd is not None
    # The break-even is exactly where On-Demand would cost the reservation's total.
    assert cb.break_even_utilization == pytest.approx(
        cb.total_usd / (od * r.instance_hours), abs=1e-3
    )
    # A guarantee that costs no more than On-Demand is taken (a tie goes to the block).
    if workload in (Workload.EVENT, Workload.INFERENCE) or cb.total_usd <= ondemand.total_usd:
        assert q.recommendation.kind is OptionKind.CAPACITY_BLOCK
    else:
        assert q.recommendation.kind is OptionKind.ON_DEMAND
    # An On-Demand Capacity Reservation is never picked while a Capacity Block fits.
    assert q.recommendation.kind is not OptionKind.ON_DEMAND_RESERVATION


def test_a_short_critical_window_on_a_common_type_may_take_an_odcr() -> None:
    r = req(
        instance_type="g5.12xlarge",
        environment=Environment.EC2,
        workload=Workload.EVENT,
        duration_hours=2,
        start=NOW + timedelta(weeks=4),
    )
    block = offering(ReservationKind.CAPACITY_BLOCK, r, 3.0)  # a whole day, billed
    q = quote(
        r,
        market(r, on_demand=HourlyPrice(usd_per_hour=5.672, source=SRC), capacity_blocks=(block,)),
    )
    assert q.recommendation.kind is OptionKind.ON_DEMAND_RESERVATION
    assert "billed by whole days" in " ".join(q.recommendation.reasons)


def test_the_most_spot_can_cost_is_the_on_demand_price() -> None:
    # Spot's price can rise to On-Demand's (its default maximum): the limits go by that.
    r = req(environment=Environment.EC2, interruptible=True)
    spot = opt(r, OptionKind.SPOT)
    assert spot.total_usd == pytest.approx(SPOT * r.instance_hours, abs=0.01)
    assert spot.most_usd == pytest.approx(OD * r.instance_hours, abs=0.01)


def test_without_an_on_demand_price_spot_is_bounded_at_ten_times_its_price() -> None:
    r = req(environment=Environment.EC2, interruptible=True)
    spot = opt(r, OptionKind.SPOT, market(r, on_demand=None))
    assert spot.most_usd == pytest.approx(SPOT * 10 * r.instance_hours, abs=0.01)
    assert any("ten times the Spot price" in reason for reason in spot.reasons)
