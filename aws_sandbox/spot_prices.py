"""EC2 DescribeSpotPriceHistory, from the catalog's Spot figures."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from aws_sandbox.errors import ec2_bad_token, ec2_dry_run
from aws_sandbox.filters import Documented, ec2_filter
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.world import SPOT
from aws_sandbox.zones import zone_id

_SPOT_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
_SPOT_SPREAD = 0.05  # each AZ's Spot price sits within ±5% of the catalog figure


# The page lists no tag filter; spot-price and timestamp it lists are not answered here.
_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html",
    fields={
        "availability-zone": lambda e: [e["AvailabilityZone"]],
        "instance-type": lambda e: [e["InstanceType"]],
        "product-description": lambda e: [e["ProductDescription"]],
    },
    unmodelled=frozenset({"availability-zone-id", "spot-price", "timestamp"}),
)


class SpotPrices:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def history(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """One entry per AZ, type and product description: the price as of the hour."""
        world = self._m.world
        known = set(world.instance_types)
        types = params.get("InstanceTypes") or sorted(known)
        products = [
            p for p in params.get("ProductDescriptions") or _SPOT_PRODUCTS if p in _SPOT_PRODUCTS
        ]
        zones = [
            z
            for z in self._m.zones_in(region)
            if params.get("AvailabilityZone", z) == z
            and params.get("AvailabilityZoneId", zone_id(z)) == zone_id(z)
        ]
        keep = ec2_filter(params.get("Filters", []), _FILTERS)
        if params.get("DryRun"):
            raise ec2_dry_run()
        stamp = self._m.clock.now().replace(minute=0, second=0, microsecond=0)
        entries = []
        for instance_type in types:
            spec = world.spec(instance_type) if instance_type in known else None
            price = spec.price(SPOT, region) if spec else None
            if price is None:
                continue
            for zone in zones:
                usd = f"{price.usd_per_hour * _spread(zone, instance_type):.6f}"
                entries += [
                    {
                        "AvailabilityZone": zone,
                        "AvailabilityZoneId": zone_id(zone),
                        "InstanceType": instance_type,
                        "ProductDescription": product,
                        "SpotPrice": usd,
                        "Timestamp": stamp,
                    }
                    for product in products
                ]
        page, token = paginate([e for e in entries if keep(e)], params, ec2_bad_token, 1000)
        response: dict[str, Any] = {"SpotPriceHistory": page}
        if token:
            response["NextToken"] = token
        return response


def _spread(zone: str, instance_type: str) -> float:
    digest = hashlib.sha256(f"{zone}|{instance_type}".encode()).digest()
    return 1 + (int.from_bytes(digest[:2], "big") / 0xFFFF * 2 - 1) * _SPOT_SPREAD
