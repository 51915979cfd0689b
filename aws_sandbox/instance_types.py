"""EC2 DescribeInstanceTypeOfferings: which instance types the sandbox sells where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_sandbox.errors import ec2_bad_token, ec2_dry_run, ec2_invalid
from aws_sandbox.filters import Documented, ec2_filter
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.world import zones_selling
from aws_sandbox.zones import zone_id

_LOCATION_TYPES = ("region", "availability-zone", "availability-zone-id")

# The page lists these two filters and no tag filter.
_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypeOfferings.html",
    fields={
        "instance-type": lambda e: [e["InstanceType"]],
        "location": lambda e: [e["Location"]],
    },
)


class InstanceTypeOfferings:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def describe(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        location_type = params.get("LocationType", "region")
        if location_type not in _LOCATION_TYPES:
            raise ec2_invalid(f"The location type '{location_type}' is not supported here.")
        keep = ec2_filter(params.get("Filters", []), _FILTERS)
        if params.get("DryRun"):
            raise ec2_dry_run()
        zones = self._m.zones_in(region)
        entries = []
        for name in self._m.world.instance_types:
            spec = self._m.world.spec(name)
            if spec is None or not self.sells(name, region):
                continue
            selling = zones_selling(spec, zones)
            locations = {
                "region": [region],
                "availability-zone": list(selling),
                "availability-zone-id": [zone_id(z) for z in selling],
            }[location_type]
            entries += [
                {"InstanceType": name, "LocationType": location_type, "Location": location}
                for location in locations
            ]
        page, token = paginate([e for e in entries if keep(e)], params, ec2_bad_token, 1000)
        response: dict[str, Any] = {"InstanceTypeOfferings": page}
        if token:
            response["NextToken"] = token
        return response

    def sells(self, instance_type: str, region: str) -> bool:
        spec = self._m.world.spec(instance_type)
        return bool(self._m.zones_in(region)) and spec is not None and region in spec.sold_in
