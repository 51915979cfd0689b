"""EC2 DescribeInstanceTypeOfferings: which instance types the sandbox sells where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.adapters.aws.sandbox.errors import ec2_bad_token, ec2_dry_run, ec2_invalid
from bot.adapters.aws.sandbox.filters import ec2_filter
from bot.adapters.aws.sandbox.pagination import paginate
from bot.adapters.aws.sandbox.parts import MarketParts
from bot.adapters.aws.sandbox.zones import zone_id

_LOCATION_TYPES = ("region", "availability-zone", "availability-zone-id")


class InstanceTypeOfferings:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def describe(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        location_type = params.get("LocationType", "region")
        if location_type not in _LOCATION_TYPES:
            raise ec2_invalid(f"The location type '{location_type}' is not supported here.")
        keep = ec2_filter(
            params.get("Filters", []),
            {
                "instance-type": lambda e: [e["InstanceType"]],
                "location": lambda e: [e["Location"]],
            },
            lambda _entry: [],
        )
        if params.get("DryRun"):
            raise ec2_dry_run()
        zones = self._m.zones_in(region)
        locations = {
            "region": [region] if zones else [],
            "availability-zone": list(zones),
            "availability-zone-id": [zone_id(z) for z in zones],
        }[location_type]
        entries = [
            {"InstanceType": name, "LocationType": location_type, "Location": location}
            for name in self._m.catalog.instance_types
            if self.sells(name, region)
            for location in locations
        ]
        page, token = paginate([e for e in entries if keep(e)], params, ec2_bad_token, 1000)
        response: dict[str, Any] = {"InstanceTypeOfferings": page}
        if token:
            response["NextToken"] = token
        return response

    def sells(self, instance_type: str, region: str) -> bool:
        """P and Trn types where the catalog has their blocks or plans; G types everywhere
        the sandbox has zones."""
        entry = self._m.catalog.instance(instance_type)
        regions = set(entry.capacity_blocks.regions) | set(entry.training_plans.regions)
        return bool(self._m.zones_in(region)) and (not regions or region in regions)
