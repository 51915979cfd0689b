"""The Pricing API's GetProducts for AmazonEC2 and AmazonSageMaker, from the market's
On-Demand figures (world.py), in the API's aws_v1 PriceList format."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from decimal import Decimal
from functools import cached_property
from typing import Any

from aws_sandbox.errors import SandboxError
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.world import ON_DEMAND, SAGEMAKER_ON_DEMAND, InstanceSpec, Price
from aws_sandbox.zones import region_location, usage_prefix

# The Pricing API lists each EC2 type once per capacity status; a caller that forgets the
# capacitystatus=Used filter gets all three (one of them free), as it would from AWS.
# The list also carries Capacity Block rows for the same types, at $0 (the block's fee is
# the offering's): a caller that forgets marketoption=OnDemand meets them, as on AWS.
_EC2_ROWS = (
    ("Used", "OnDemand"),
    ("UnusedCapacityReservation", "OnDemand"),
    ("AllocatedCapacityReservation", "OnDemand"),
    ("Used", "CapacityBlock"),
)
_EC2_USAGE = {
    "Used": "BoxUsage",
    "UnusedCapacityReservation": "UnusedBox",
    "AllocatedCapacityReservation": "Reservation",
}
_SAGEMAKER_USAGE = {"Training": "Train", "Hosting": "Host"}
_ON_DEMAND_TERM = "JRTCKXETXF"  # AWS's offer term code for On-Demand
_HOURLY_RATE = "6YS6EN2CT7"  # AWS's rate code for per-hour usage


class PriceList:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def get_products(self, params: Mapping[str, Any], _region: str) -> dict[str, Any]:
        """Products of AmazonEC2 and AmazonSageMaker; no other service has any here."""
        candidates = {
            "AmazonEC2": self._ec2_products,
            "AmazonSageMaker": self._sagemaker_products,
        }.get(params["ServiceCode"], [])
        filters = params.get("Filters", [])
        matching = [p for p in candidates if all(_matches(p, f) for f in filters)]
        page, token = paginate(
            matching,
            params,
            lambda t: SandboxError(
                "InvalidNextTokenException", "The nextToken provided is invalid."
            ),
            100,
        )
        response: dict[str, Any] = {
            "FormatVersion": params.get("FormatVersion", "aws_v1"),
            "PriceList": [json.dumps(p) for p in page],
        }
        if token:
            response["NextToken"] = token
        return response

    @cached_property
    def _ec2_products(self) -> list[dict[str, Any]]:
        products = []
        for entry, region, price in self._priced(ON_DEMAND):
            for status, market in _EC2_ROWS:
                free = status == "AllocatedCapacityReservation" or market == "CapacityBlock"
                rate = Decimal(0) if free else _usd(price)
                attributes = {
                    "servicecode": "AmazonEC2",
                    "instanceType": entry.instance_type,
                    "instanceFamily": "GPU instance"
                    if entry.accelerator == "nvidia"
                    else "Machine Learning ASIC Instances",
                    "regionCode": region,
                    "location": region_location(region),
                    "locationType": "AWS Region",
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "licenseModel": "No License required",
                    "capacitystatus": status,
                    "marketoption": market,
                    "operation": "RunInstances",
                    "usagetype": _ec2_usage_type(region, status, market, entry.instance_type),
                }
                text = f"${rate:.4f} per On Demand Linux {entry.instance_type} Instance Hour"
                products.append(
                    _product("AmazonEC2", "Compute Instance", attributes, rate, text, price)
                )
        return products

    @cached_property
    def _sagemaker_products(self) -> list[dict[str, Any]]:
        products = []
        for entry, region, price in self._priced(SAGEMAKER_ON_DEMAND):
            for component in ("Training", "Hosting"):
                attributes = {
                    "servicecode": "AmazonSageMaker",
                    "instanceName": entry.sagemaker_name,
                    "regionCode": region,
                    "location": region_location(region),
                    "locationType": "AWS Region",
                    "component": component,
                    "usagetype": f"{usage_prefix(region)}-{_SAGEMAKER_USAGE[component]}:"
                    f"{entry.sagemaker_name}",
                }
                rate = _usd(price)
                text = f"${rate:.4f} per {component} {entry.sagemaker_name} Hour"
                products.append(
                    _product("AmazonSageMaker", "ML Instance", attributes, rate, text, price)
                )
        return products

    def _priced(self, kind: str) -> list[tuple[InstanceSpec, str, Price]]:
        world = self._m.world
        found = []
        for name in world.instance_types:
            spec = world.spec(name)
            assert spec is not None
            for region in self._m.zones:
                price = spec.price(kind, region)
                if price is not None:
                    found.append((spec, region, price))
        return found


def _ec2_usage_type(region: str, status: str, market: str, instance_type: str) -> str:
    # EC2 leaves the region prefix off in us-east-1 only.
    prefix = "" if region == "us-east-1" else f"{usage_prefix(region)}-"
    usage = "CapacityBlock" if market == "CapacityBlock" else _EC2_USAGE[status]
    return f"{prefix}{usage}:{instance_type}"


def _usd(price: Price) -> Decimal:
    return Decimal(str(price.usd_per_hour))


def _product(
    service: str,
    family: str,
    attributes: dict[str, str],
    rate: Decimal,
    description: str,
    price: Price,
) -> dict[str, Any]:
    """One PriceList item in the Pricing API's aws_v1 format."""
    key = "|".join(attributes[k] for k in sorted(attributes))
    sku = hashlib.sha256(key.encode()).hexdigest()[:16].upper()
    term = f"{sku}.{_ON_DEMAND_TERM}"
    effective = f"{price.as_of.isoformat()}T00:00:00Z"
    return {
        "product": {"productFamily": family, "attributes": attributes, "sku": sku},
        "serviceCode": service,
        "terms": {
            "OnDemand": {
                term: {
                    "priceDimensions": {
                        f"{term}.{_HOURLY_RATE}": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": description,
                            "appliesTo": [],
                            "rateCode": f"{term}.{_HOURLY_RATE}",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": f"{rate:.10f}"},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": effective,
                    "offerTermCode": _ON_DEMAND_TERM,
                    "termAttributes": {},
                }
            }
        },
        "version": price.as_of.strftime("%Y%m%d000000"),
        "publicationDate": effective,
    }


def _matches(product: Mapping[str, Any], spec: Mapping[str, str]) -> bool:
    """One GetProducts filter; fields are product attributes, or ServiceCode."""
    field, value, kind = spec["Field"], spec["Value"], spec["Type"]
    actual = (
        product["serviceCode"]
        if field == "ServiceCode"
        else product["product"]["attributes"].get(field)
    )
    options = [v.strip() for v in value.split(",")]
    if kind == "NONE_OF":
        return actual not in options
    if actual is None:
        return False
    if kind == "CONTAINS":
        return value in actual
    if kind == "ANY_OF":
        return actual in options
    return bool(actual == value)  # TERM_MATCH and EQUALS
