"""SageMaker SearchTrainingPlanOfferings: what training plans the market would sell."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import sagemaker_invalid
from aws_sandbox.offers import (
    TARGET_RESOURCES,
    PlanOffer,
    PlanPart,
    pick_zone,
    upfront_fee,
)
from aws_sandbox.parts import MarketParts
from aws_sandbox.rules import (
    BLOCK_DAYS_BY_DAY,
    PLAN_INSTANCE_COUNTS,
    block_start_too_far,
    plan_hours_valid,
)
from aws_sandbox.times import hours_and_minutes, next_boundary, parse_time
from aws_sandbox.world import TRAINING_PLAN

OFFERINGS_PER_SEARCH = 3
# Plans longer than the longest day-stepped block come in two consecutive parts, as long
# plans do on AWS: every consumer must handle ReservedCapacityOfferings with several parts.
SPLIT_AFTER_DAYS = BLOCK_DAYS_BY_DAY


class PlanOfferings:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def search(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        for required in ("InstanceType", "InstanceCount", "DurationHours", "TargetResources"):
            if required not in params:
                raise sagemaker_invalid(f"{required} is required to search for offerings.")
        count, hours = int(params["InstanceCount"]), int(params["DurationHours"])
        if count not in PLAN_INSTANCE_COUNTS:
            allowed = ", ".join(map(str, PLAN_INSTANCE_COUNTS))
            raise sagemaker_invalid(f"InstanceCount {count} is not valid. Allowed: {allowed}.")
        if not plan_hours_valid(hours):
            raise sagemaker_invalid(
                f"DurationHours {hours} is not valid. Specify whole days (multiples of 24 "
                "hours) from 1 to 182 days."
            )
        now = self._m.clock.now()
        after = parse_time(params["StartTimeAfter"]) if "StartTimeAfter" in params else None
        before = parse_time(params["EndTimeBefore"]) if "EndTimeBefore" in params else None
        earliest = max(after or now, now)
        if before is not None and before <= earliest:
            raise sagemaker_invalid("EndTimeBefore must be later than StartTimeAfter.")
        targets = tuple(t for t in TARGET_RESOURCES if t in params["TargetResources"])
        offers = self._find(
            str(params["InstanceType"]), count, hours, targets, region, earliest, before
        )
        requested = {"RequestedStartTimeAfter": after, "RequestedEndTimeBefore": before}
        echo = {k: v for k, v in requested.items() if v is not None}
        return {"TrainingPlanOfferings": [_offering(o) | echo for o in offers]}

    def _find(
        self,
        sagemaker_type: str,
        count: int,
        hours: int,
        targets: tuple[str, ...],
        region: str,
        earliest: datetime,
        latest_end: datetime | None,
    ) -> list[PlanOffer]:
        zones = self._m.zones_in(region)
        spec = self._m.world.spec(sagemaker_type)
        if not zones or spec is None or region not in spec.training_plans_in:
            return []
        instance_type = spec.instance_type
        price = spec.price(TRAINING_PLAN, region)
        if price is None:
            return []
        usd = price.usd_per_hour
        found: list[PlanOffer] = []
        for start in _starts(earliest, self._m.clock.now()):
            parts = _split(instance_type, zones, start, hours // 24)
            end = parts[-1].end
            if latest_end is not None and end > latest_end:
                break
            now = self._m.clock.now()
            if not self._m.conditions.available(instance_type, start, end, count, region, now):
                continue
            # The parts are consecutive, so the plan's fee covers start to end.
            fee = upfront_fee(usd * self._m.conditions.price_factor, start, end, count)
            found.append(PlanOffer(instance_type, count, parts, fee, targets))
            if len(found) == OFFERINGS_PER_SEARCH:
                break
        return found


def _starts(earliest: datetime, now: datetime) -> Iterator[datetime]:
    """Every 11:30 UTC from `earliest`. Training plans draw on the same reserved capacity
    as Capacity Blocks, so the sandbox sells them on the same 8-week horizon."""
    start = next_boundary(earliest)
    while not block_start_too_far(start, now):
        yield start
        start += timedelta(days=1)


def _split(
    instance_type: str, zones: tuple[str, ...], start: datetime, days: int
) -> tuple[PlanPart, ...]:
    first = -(-days // 2) if days > SPLIT_AFTER_DAYS else days
    parts, cursor = [], start
    for index, length in enumerate(d for d in (first, days - first) if d):
        end = cursor + timedelta(days=length)
        zone = pick_zone(zones, instance_type, start.date().isoformat(), index)
        parts.append(PlanPart(zone, cursor, end))
        cursor = end
    return tuple(parts)


def _offering(offer: PlanOffer) -> dict[str, Any]:
    hours, minutes = hours_and_minutes(offer.start, offer.end)
    return {
        "TrainingPlanOfferingId": offer.offering_id(),
        "TargetResources": list(offer.targets),
        "DurationHours": hours,
        "DurationMinutes": minutes,
        "UpfrontFee": offer.fee,
        "CurrencyCode": "USD",
        "ReservedCapacityOfferings": [_part(offer, part) for part in offer.parts],
    }


def _part(offer: PlanOffer, part: PlanPart) -> dict[str, Any]:
    hours, minutes = hours_and_minutes(part.start, part.end)
    return {
        "ReservedCapacityType": "Instance",
        "InstanceType": f"ml.{offer.instance_type}",
        "InstanceCount": offer.count,
        "AvailabilityZone": part.zone,
        "DurationHours": hours,
        "DurationMinutes": minutes,
        "StartTime": part.start,
        "EndTime": part.end,
    }
