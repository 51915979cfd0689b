"""For one request: what each way of getting the GPUs costs, and which ones are possible.

`assess_options` applies the AWS rules of each option to a request and a market snapshot.
Costs are totals at the expected utilisation: On-Demand and Spot scale with it, a prepaid
reservation does not. The recommendation lives in `recommendation.py`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from bot.domain import offering_rules as rules
from bot.domain.catalog import Catalog, InstanceType
from bot.domain.future_reservation import AHEAD, AT_WINDOW, reserves_ahead
from bot.domain.market import HourlyPrice, MarketSnapshot, Offering, PriceSource
from bot.domain.request import CapacityRequest, Environment, Workload
from bot.domain.words import counted


class OptionKind(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"
    ON_DEMAND_RESERVATION = "on-demand-reservation"

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def reserved(self) -> bool:
        return self in RESERVED_KINDS


_LABELS = {
    OptionKind.ON_DEMAND: "On-Demand",
    OptionKind.SPOT: "Spot",
    OptionKind.CAPACITY_BLOCK: "Capacity Block",
    OptionKind.TRAINING_PLAN: "Training plan",
    OptionKind.ON_DEMAND_RESERVATION: "On-Demand Capacity Reservation",
}
RESERVED_KINDS = frozenset(
    {OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN, OptionKind.ON_DEMAND_RESERVATION}
)
# Families whose short-notice On-Demand capacity is scarce (the article's "P types").
SCARCE_FAMILIES = ("p", "trn")


class Option(BaseModel):
    """One way of getting the capacity, assessed against one request."""

    model_config = ConfigDict(frozen=True)

    kind: OptionKind
    eligible: bool
    reasons: list[str]  # the rule that excluded it, or the notes that apply
    total_usd: float | None = None  # expected total at the expected utilisation
    # The most it can cost: pay-as-you-go at 100% of the window, a prepaid total as is.
    # Spending limits are checked against this, never against the requester's estimate.
    most_usd: float | None = None
    hourly_usd: float | None = None  # per instance-hour
    upfront: bool = False
    interruptible: bool = False
    guaranteed: bool = False
    # An ODCR the bot asks for at approval as a future-dated Capacity Reservation
    # (future_reservation.py); otherwise one is made when the window opens.
    reserved_ahead: bool = False
    break_even_utilization: float | None = None  # reserved kinds, as a fraction
    # What the break-even compares with: the quote's On-Demand, or SageMaker's On-Demand
    # rate for a training plan when the request may run on EC2 (its On-Demand is EC2's),
    # and that rate (the chart draws the line it crosses).
    break_even_against: str = "On-Demand"
    break_even_usd_per_hour: float | None = None
    billed_instances: int | None = None
    billed_hours: float | None = None
    offering: Offering | None = None
    alternatives: list[Offering] = []
    price_source: PriceSource | None = None


def _ineligible(kind: OptionKind, *reasons: str, **flags: bool) -> Option:
    return Option(kind=kind, eligible=False, reasons=list(reasons), **flags)


def scarce(instance_type: str) -> bool:
    """P and Trn types: short-notice On-Demand and short reservations are rarely there."""
    return instance_type.startswith(SCARCE_FAMILIES)


def _family_is_scarce(instance: InstanceType) -> bool:
    return scarce(instance.instance_type)


def on_demand_rate(request: CapacityRequest, snapshot: MarketSnapshot) -> HourlyPrice | None:
    """The On-Demand rate the request would pay: SageMaker's for SageMaker work."""
    if request.environment is Environment.SAGEMAKER and snapshot.sagemaker_on_demand:
        return snapshot.sagemaker_on_demand
    return snapshot.on_demand


def assess_on_demand(
    request: CapacityRequest, snapshot: MarketSnapshot, instance: InstanceType
) -> Option:
    kind = OptionKind.ON_DEMAND
    rate = on_demand_rate(request, snapshot)
    if rate is None:
        return _ineligible(kind, snapshot.errors.get(kind.value, "no On-Demand price found"))
    reasons = [
        "no commitment: pay per second only while instances run",
        "no guarantee: availability depends on regional supply and changes fast",
    ]
    if _family_is_scarce(instance):
        reasons.append(f"short-notice On-Demand capacity for {instance.family} is often scarce")
    return Option(
        kind=kind,
        eligible=True,
        reasons=reasons,
        total_usd=_money(rate.usd_per_hour * request.instance_hours * request.utilization),
        most_usd=_money(rate.usd_per_hour * request.instance_hours),
        hourly_usd=rate.usd_per_hour,
        billed_instances=request.count,
        billed_hours=request.duration_hours * request.utilization,
        price_source=rate.source,
    )


def assess_spot(request: CapacityRequest, snapshot: MarketSnapshot) -> Option:
    kind = OptionKind.SPOT
    flags = {"interruptible": True}
    if not request.interruptible:
        return _ineligible(
            kind,
            "Spot instances can be reclaimed at two minutes' notice: only for work marked "
            "`interruptible` (it checkpoints and can restart)",
            **flags,
        )
    if request.environment is Environment.SAGEMAKER and request.workload in (
        Workload.INFERENCE,
        Workload.EVENT,
    ):
        return _ineligible(
            kind,
            "SageMaker endpoints do not run on Spot; managed Spot is for training jobs",
            **flags,
        )
    if snapshot.spot is None:
        return _ineligible(kind, snapshot.errors.get(kind.value, "no Spot price found"), **flags)
    spot = snapshot.spot
    zone = f" in {spot.zone}" if spot.zone else ""
    reasons = [
        f"cheapest current Spot price{zone}; prices move with demand",
        "can be interrupted at two minutes' notice; no capacity guarantee",
    ]
    # The Spot price can rise as far as the On-Demand price (the default maximum), so the
    # most a Spot request can cost, and what the limits go by, is On-Demand's.
    # Without an On-Demand price, Spot's "up to 90% off" bounds it at ten times its price.
    ceiling = on_demand_rate(request, snapshot)
    if ceiling is None:
        reasons.append(
            "no On-Demand price to bound it: the limits take ten times the Spot price "
            "(Spot is at most 90% below On-Demand)"
        )
    most_rate = max(ceiling.usd_per_hour, spot.usd_per_hour) if ceiling else spot.usd_per_hour * 10
    return Option(
        kind=kind,
        eligible=True,
        reasons=reasons,
        total_usd=_money(spot.usd_per_hour * request.instance_hours * request.utilization),
        most_usd=_money(most_rate * request.instance_hours),
        hourly_usd=spot.usd_per_hour,
        interruptible=True,
        billed_instances=request.count,
        billed_hours=request.duration_hours * request.utilization,
        price_source=spot.source,
    )


def assess_capacity_block(
    request: CapacityRequest,
    snapshot: MarketSnapshot,
    instance: InstanceType,
    now: datetime,
) -> Option:
    kind = OptionKind.CAPACITY_BLOCK
    flags = {"upfront": True, "guaranteed": True}
    if request.environment is Environment.SAGEMAKER:
        return _ineligible(
            kind,
            "Capacity Blocks are for EC2 instances; SageMaker-managed instances cannot use "
            "them (a training plan is the SageMaker reservation)",
            **flags,
        )
    if request.count > rules.CB_MAX_INSTANCES_PER_BLOCK:
        return _ineligible(
            kind,
            f"a Capacity Block holds at most {rules.CB_MAX_INSTANCES_PER_BLOCK} instances; "
            f"{request.count} would need several blocks",
            **flags,
        )
    if rules.capacity_block_duration_for(request.duration_hours) is None:
        return _ineligible(kind, f"Capacity Blocks last at most {rules.CB_MAX_DAYS} days", **flags)
    if rules.capacity_block_start_too_far(request.start, now):
        earliest = (request.start - rules.CB_MAX_AHEAD).date().isoformat()
        return _ineligible(
            kind,
            "Capacity Blocks can be booked at most 8 weeks ahead; "
            f"this one can be booked from {earliest}",
            **flags,
        )
    offerings = [o for o in snapshot.capacity_blocks if o.count >= request.count]
    notes = list(snapshot.notes.get(kind.value, ()))
    if not offerings:
        reason = _no_offering_reason(kind, request, snapshot, instance)
        return _ineligible(kind, reason, *notes, **flags)
    chosen = best_offering(offerings, request)
    reasons = []
    if chosen.duration_hours != request.duration_hours:
        # The offering's own length: the same figure the total is billed on.
        reasons.append(
            f"blocks come in {_block_steps()}: {_hours(request.duration_hours)} is billed as "
            f"{_hours(chosen.duration_hours)}"
        )
    if chosen.zone_type and chosen.zone_type != "availability-zone":
        reasons.append(f"in {chosen.zone}, a {chosen.zone_type} (not a regular Availability Zone)")
    reasons.extend(_start_notes(chosen, request))
    reasons.append(
        "paid up front; cannot be modified or cancelled; ends 11:30 UTC, and instances are "
        "terminated 30 minutes before the end"
    )
    if request.region not in instance.capacity_blocks.regions:
        reasons.append(
            f"{request.region} is not in the catalog's regions for {instance.instance_type} "
            "(the API found offerings anyway)"
        )
    reasons.extend(notes)
    return _reserved_option(kind, request, snapshot.on_demand, chosen, offerings, reasons, flags)


def assess_training_plan(
    request: CapacityRequest,
    snapshot: MarketSnapshot,
    instance: InstanceType,
) -> Option:
    kind = OptionKind.TRAINING_PLAN
    flags = {"upfront": True, "guaranteed": True}
    if request.environment is Environment.EC2:
        return _ineligible(
            kind,
            "training plans reserve SageMaker capacity (training jobs, HyperPod, endpoints), "
            "not EC2 instances",
            **flags,
        )
    if rules.training_plan_count_for(request.count) is None:
        return _ineligible(
            kind,
            f"a training plan holds at most {rules.TP_INSTANCE_COUNTS[-1]} instances",
            **flags,
        )
    if rules.training_plan_duration_for(request.duration_hours) is None:
        return _ineligible(kind, f"training plans last at most {rules.TP_MAX_DAYS} days", **flags)
    offerings = [o for o in snapshot.training_plans if o.count >= request.count]
    notes = list(snapshot.notes.get(kind.value, ()))
    if not offerings:
        reason = _no_offering_reason(kind, request, snapshot, instance)
        return _ineligible(kind, reason, *notes, **flags)
    chosen = best_offering(offerings, request)
    target = rules.training_plan_target(request.workload)
    reasons = [
        f"a plan for {rules.TP_TARGET_LABELS[target]} (searched with target {target}): "
        "a plan serves only the resource it targets"
    ]
    if chosen.count != request.count:
        reasons.append(
            f"plans come in 1, 2, 4, 8, 16, 32 or 64 instances: {request.count} is billed as "
            f"{chosen.count}"
        )
    if chosen.duration_hours != request.duration_hours:
        reasons.append(
            f"plans come in whole days: {_hours(request.duration_hours)} is billed as "
            f"{_hours(chosen.duration_hours)}"
        )
    reasons.extend(_start_notes(chosen, request))
    if len(chosen.parts) > 1:
        reasons.append(f"delivered in {len(chosen.parts)} parts (see the offering)")
    if request.workload in (Workload.INFERENCE, Workload.EVENT):
        reasons.append("the endpoint stops serving when the plan expires: clean up on time")
    reasons.append("paid up front")
    reasons.extend(notes)
    baseline = snapshot.sagemaker_on_demand or snapshot.on_demand
    # Named when it is not the figure the On-Demand option itself is priced at.
    against = (
        "SageMaker On-Demand"
        if baseline is not None and baseline is not on_demand_rate(request, snapshot)
        else "On-Demand"
    )
    return _reserved_option(
        kind, request, baseline, chosen, offerings, reasons, flags, against=against
    )


def assess_on_demand_reservation(
    request: CapacityRequest, snapshot: MarketSnapshot, instance: InstanceType, now: datetime
) -> Option:
    kind = OptionKind.ON_DEMAND_RESERVATION
    flags = {"guaranteed": False}  # made when the window opens: see future_reservation.py
    if request.environment is Environment.SAGEMAKER:
        return _ineligible(
            kind, "On-Demand Capacity Reservations reserve EC2 instances, not SageMaker", **flags
        )
    rate = snapshot.on_demand
    if rate is None:
        return _ineligible(kind, snapshot.errors.get("on-demand", "no On-Demand price"), **flags)
    ahead = reserves_ahead(
        instance.instance_type, instance.vcpus, request.count, request.start, now
    )
    when = AHEAD if ahead else AT_WINDOW
    reasons = [
        when[0].upper() + when[1:],
        "billed at the On-Demand rate for the whole window, used or not: no discount "
        "without a long-term commitment",
        "meant for steady, planned workloads rather than short or exploratory ones",
    ]
    if _family_is_scarce(instance):
        reasons.append(
            f"short-term reservations for {instance.family} (a P/Trn type) are rarely available"
        )
    total = _money(rate.usd_per_hour * request.instance_hours)
    return Option(
        kind=kind,
        eligible=True,
        reasons=reasons,
        total_usd=total,
        most_usd=total,
        hourly_usd=rate.usd_per_hour,
        break_even_utilization=1.0,
        break_even_usd_per_hour=rate.usd_per_hour,
        billed_instances=request.count,
        billed_hours=float(request.duration_hours),
        price_source=rate.source,
        reserved_ahead=ahead,
        **flags,
    )


def assess_options(
    request: CapacityRequest, snapshot: MarketSnapshot, catalog: Catalog, now: datetime
) -> list[Option]:
    """Every option for the request, in a fixed order, eligible or with the rule that bars it."""
    instance = catalog.instance(request.instance_type)
    return [
        assess_on_demand(request, snapshot, instance),
        assess_spot(request, snapshot),
        assess_capacity_block(request, snapshot, instance, now),
        assess_training_plan(request, snapshot, instance),
        assess_on_demand_reservation(request, snapshot, instance, now),
    ]


def break_even(reserved_total: float, od_hourly: float, request: CapacityRequest) -> float:
    """The utilisation at which On-Demand for the asked window costs the reservation's total."""
    return reserved_total / (od_hourly * request.instance_hours)


def _reserved_option(
    kind: OptionKind,
    request: CapacityRequest,
    baseline: HourlyPrice | None,
    chosen: Offering,
    offerings: list[Offering],
    reasons: list[str],
    flags: dict[str, bool],
    against: str = "On-Demand",
) -> Option:
    total = _money(chosen.upfront_usd)
    return Option(
        kind=kind,
        eligible=True,
        reasons=reasons,
        total_usd=total,
        most_usd=total,
        hourly_usd=round(chosen.hourly_usd, 4),
        # Not rounded here: it is rounded once, where it is shown (words.percent).
        break_even_utilization=(
            break_even(total, baseline.usd_per_hour, request) if baseline else None
        ),
        break_even_against=against,
        break_even_usd_per_hour=baseline.usd_per_hour if baseline else None,
        billed_instances=chosen.count,
        billed_hours=chosen.duration_hours,
        offering=chosen,
        alternatives=[o for o in offerings if o.offering_id != chosen.offering_id],
        price_source=chosen.source,
        **flags,
    )


def best_offering(offerings: list[Offering], request: CapacityRequest) -> Offering:
    """The offering that covers most of the asked window, then starts closest to the
    asked start, then costs least. (Blocks end at 11:30 UTC, so few match exactly; AWS's
    own order, "first is the best match", ties break in its favour: min is stable.)"""

    def key(o: Offering) -> tuple[float, float, float]:
        covered = (min(o.end, request.end) - max(o.start, request.start)).total_seconds()
        return (-max(covered, 0), abs((o.start - request.start).total_seconds()), o.upfront_usd)

    return min(offerings, key=key)


def _start_notes(offering: Offering, request: CapacityRequest) -> list[str]:
    if offering.start == request.start:
        return []
    return [
        f"starts {offering.start:%Y-%m-%d %H:%M} UTC, ends {offering.end:%Y-%m-%d %H:%M} UTC "
        f"(asked: from {request.start:%Y-%m-%d %H:%M} UTC)"
    ]


def _no_offering_reason(
    kind: OptionKind, request: CapacityRequest, snapshot: MarketSnapshot, instance: InstanceType
) -> str:
    if kind.value in snapshot.errors:
        return snapshot.errors[kind.value]
    availability = (
        instance.capacity_blocks if kind is OptionKind.CAPACITY_BLOCK else instance.training_plans
    )
    if not availability.offered:
        return f"{kind.label}s are not offered for {instance.instance_type}"
    return (
        f"no {kind.label} offering for {request.count}x {instance.instance_type} around "
        f"{request.start:%Y-%m-%d} in {request.region} (sold out, or not offered there)"
    )


def _block_steps() -> str:
    return f"whole days up to {rules.CB_MAX_DAYS_BY_DAY}, then {rules.CB_STEP_DAYS_AFTER}-day steps"


def _hours(hours: float) -> str:
    """`2 days`, `30 hours`, `47 h 10 min`: exact, never rounded to a nicer figure."""
    minutes = round(hours * 60)
    if minutes % (24 * 60) == 0:
        return counted(minutes // (24 * 60), "day")
    if minutes % 60 == 0:
        return counted(minutes // 60, "hour")
    return f"{minutes // 60} h {minutes % 60} min"


def _money(value: float) -> float:
    return round(value, 2)
