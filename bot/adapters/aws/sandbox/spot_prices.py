"""EC2 DescribeSpotPriceHistory, from the catalog's Spot figures."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from bot.adapters.aws.sandbox.errors import ec2_bad_token, ec2_dry_run
from bot.adapters.aws.sandbox.filters import ec2_filter
from bot.adapters.aws.sandbox.pagination import paginate
from bot.adapters.aws.sandbox.parts import MarketParts
from bot.adapters.aws.sandbox.zones import regional_usd, zone_id
from bot.domain.catalog import PriceKind

_SPOT_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
_SPOT_SPREAD = 0.05  # each AZ's Spot price sits within ±5% of the catalog figure


class SpotPrices:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def history(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """One entry per AZ, type and product description: the price as of the hour."""
        catalog = self._m.catalog
        known = set(catalog.instance_types)
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
        keep = ec2_filter(
            params.get("Filters", []),
            {
                "availability-zone": lambda e: [e["AvailabilityZone"]],
                "instance-type": lambda e: [e["InstanceType"]],
                "product-description": lambda e: [e["ProductDescription"]],
            },
            lambda _entry: [],
        )
        if params.get("DryRun"):
            raise ec2_dry_run()
        stamp = self._m.clock.now().replace(minute=0, second=0, microsecond=0)
        entries = []
        for instance_type in types:
            sold = instance_type in known
            price = catalog.price(PriceKind.SPOT, instance_type, region) if sold else None
            if price is None:
                continue
            for zone in zones:
                here = regional_usd(price.usd_per_hour, price.region, region)
                usd = f"{here * _spread(zone, instance_type):.6f}"
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
