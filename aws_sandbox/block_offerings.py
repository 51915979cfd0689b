"""EC2 DescribeCapacityBlockOfferings: what Capacity Blocks the market would sell."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_bad_token, ec2_dry_run, ec2_invalid
from aws_sandbox.offers import BlockOffer, pick_zone, upfront_fee
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.rules import (
    BLOCK_MAX_INSTANCES,
    block_end_on,
    block_hours_valid,
    block_start_too_far,
)
from aws_sandbox.times import (
    ceil_half_hour,
    hours_and_minutes,
    next_boundary,
    parse_time,
)
from aws_sandbox.world import CAPACITY_BLOCK

MAX_OFFERINGS_PER_SEARCH = 6  # AWS's cap on one DescribeCapacityBlockOfferings answer


class BlockOfferings:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def describe(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        hours = int(params["CapacityDurationHours"])
        if not block_hours_valid(hours):
            raise ec2_invalid(
                f"The requested capacity duration ({hours} hours) is not valid. Specify the "
                "duration in 1-day increments (24 hours) up to 14 days, and in 7-day "
                "increments up to 182 days."
            )
        types = _requested_types(params)
        count = _requested_count(params)
        now = self._m.clock.now()
        earliest = parse_time(params["StartDateRange"]) if "StartDateRange" in params else now
        latest_end = parse_time(params["EndDateRange"]) if "EndDateRange" in params else None
        if block_start_too_far(earliest, now):
            raise ec2_invalid("The StartDateRange must be within 8 weeks (56 days) from now.")
        if latest_end is not None and latest_end <= earliest:
            raise ec2_invalid("The EndDateRange must be later than the StartDateRange.")
        if params.get("DryRun"):
            raise ec2_dry_run()
        offers = self._find(region, types, count, hours, earliest, latest_end, now)
        page, token = paginate(offers, params, ec2_bad_token, MAX_OFFERINGS_PER_SEARCH)
        response: dict[str, Any] = {"CapacityBlockOfferings": [_offering(o) for o in page]}
        if token:
            response["NextToken"] = token
        return response

    def _find(
        self,
        region: str,
        types: list[str],
        count: int,
        hours: int,
        earliest: datetime,
        latest_end: datetime | None,
        now: datetime,
    ) -> list[BlockOffer]:
        """Up to six offerings, one per start day, earliest first (preferred types first)."""
        zones = self._m.zones_in(region)
        sold = [t for t in types if self._sells(t, region)]
        found: list[BlockOffer] = []
        if not zones or not sold:
            return found
        for start in _starts(earliest, now):
            end = block_end_on(start + timedelta(hours=hours))
            if latest_end is not None and end > latest_end:
                break
            for kind in sold:
                offer = self._offer(kind, region, zones, count, start, end)
                if offer is not None:
                    found.append(offer)
                if len(found) == MAX_OFFERINGS_PER_SEARCH:
                    return found
        return found

    def _sells(self, instance_type: str, region: str) -> bool:
        """Whether this market sells Capacity Blocks of this exact EC2 type here."""
        spec = self._m.world.spec(instance_type)
        return spec is not None and region in spec.capacity_blocks_in

    def _offer(
        self,
        instance_type: str,
        region: str,
        zones: tuple[str, ...],
        count: int,
        start: datetime,
        end: datetime,
    ) -> BlockOffer | None:
        if not self._m.conditions.available(
            instance_type, start, end, count, region, self._m.clock.now()
        ):
            return None
        spec = self._m.world.spec(instance_type)
        price = spec.price(CAPACITY_BLOCK, region) if spec else None
        if price is None:
            return None
        zone = pick_zone(zones, instance_type, start.date().isoformat())
        usd = price.usd_per_hour * self._m.conditions.price_factor
        fee = upfront_fee(usd, start, end, count)
        return BlockOffer(instance_type, zone, count, start, end, fee)


def _starts(earliest: datetime, now: datetime) -> Iterator[datetime]:
    """One start per day, up to 8 weeks ahead: "as soon as possible" (the next half hour)
    when the search starts now, else 11:30 UTC; 11:30 UTC on every day after."""
    start = ceil_half_hour(now) if earliest <= now else next_boundary(earliest)
    while not block_start_too_far(start, now):
        yield start
        start = block_end_on(start + timedelta(days=1))


def _requested_types(params: Mapping[str, Any]) -> list[str]:
    single = params.get("InstanceType")
    preferred = [p["InstanceType"] for p in params.get("InstanceTypePreferences", [])]
    if single and preferred:
        raise SandboxError(
            "InvalidParameterCombination",
            "The parameters InstanceType and InstanceTypePreferences cannot be used together.",
        )
    types = [single] if single else list(dict.fromkeys(p for p in preferred if p))
    if not types:
        raise SandboxError(
            "MissingParameter",
            "The request must contain the parameter InstanceType or InstanceTypePreferences.",
        )
    return types


def _requested_count(params: Mapping[str, Any]) -> int:
    if "InstanceCount" not in params:
        raise SandboxError(
            "MissingParameter", "The request must contain the parameter InstanceCount."
        )
    count = int(params["InstanceCount"])
    if not 1 <= count <= BLOCK_MAX_INSTANCES:
        raise ec2_invalid(
            f"The instance count ({count}) is not valid. A Capacity Block can have 1 to "
            f"{BLOCK_MAX_INSTANCES} instances."
        )
    return count


def _offering(offer: BlockOffer) -> dict[str, Any]:
    hours, minutes = hours_and_minutes(offer.start, offer.end)
    return {
        "CapacityBlockOfferingId": offer.offering_id(),
        "InstanceType": offer.instance_type,
        "AvailabilityZone": offer.zone,
        "InstanceCount": offer.count,
        "StartDate": offer.start,
        "EndDate": offer.end,
        "CapacityBlockDurationHours": hours,
        "CapacityBlockDurationMinutes": minutes,
        "UpfrontFee": offer.fee,
        "CurrencyCode": "USD",
        "Tenancy": "default",
    }
