"""Hourly prices: On-Demand from the AWS Pricing API (EC2 and SageMaker), Spot from the
EC2 Spot price history, and the catalog's figure for the same region when a lookup failed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from bot.adapters.aws.aws_clients import AwsClients, as_utc, aws_source
from bot.adapters.aws.offerings import CURRENCY
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.market import HourlyPrice, Origin, PriceSource
from bot.domain.request import CapacityRequest, Workload
from bot.domain.words import counted

if TYPE_CHECKING:
    from mypy_boto3_pricing import PricingClient

SPOT_LOOKBACK = timedelta(hours=3)
# Price list dimensions billed per instance-hour. Other units on the same product (such as
# a training plan's upfront fee, unit "Quantity") are not an hourly rate.
HOURLY_UNITS = frozenset({"hrs", "hr", "hour", "hours"})


class PriceUnavailable(Exception):
    """No hourly figure can be given; the message says why, for the user."""


def catalog_price(
    catalog: Catalog, kind: PriceKind, request: CapacityRequest, now: datetime
) -> HourlyPrice | None:
    """The catalog's figure for the request's own region; another region's is no price."""
    entry = catalog.price(kind, request.instance_type, request.region)
    if entry is None or entry.region != request.region:
        return None
    return HourlyPrice(
        usd_per_hour=entry.usd_per_hour,
        source=PriceSource(
            origin=Origin.CATALOG,
            detail=f"{entry.source} ({entry.region}, {entry.as_of.isoformat()})",
            as_of=now,
            estimate=entry.estimate,
        ),
    )


def ec2_on_demand(clients: AwsClients, request: CapacityRequest, now: datetime) -> HourlyPrice:
    filters = {
        "instanceType": request.instance_type,
        "regionCode": request.region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        # The list also carries Capacity Block rows for the same types, some at $0.
        "marketoption": "OnDemand",
    }
    usd = _on_demand_rate(
        clients.pricing, "AmazonEC2", filters, lambda _attributes: True, request, "EC2"
    )
    return HourlyPrice(usd_per_hour=usd, source=aws_source(clients, "Pricing API (AmazonEC2)", now))


def sagemaker_on_demand(
    clients: AwsClients, request: CapacityRequest, now: datetime
) -> HourlyPrice:
    filters = {"instanceName": f"ml.{request.instance_type}", "regionCode": request.region}
    usage = sagemaker_usage(request)
    component = _SAGEMAKER_COMPONENTS[usage]
    # USE1-Train:ml.p5.48xlarge, or Train:… where the region has no prefix.
    usage_re = re.compile(rf"(?:[A-Z0-9]+-)?{usage}:ml\.", re.IGNORECASE)

    def wanted(attributes: dict[str, Any]) -> bool:
        return bool(
            usage_re.match(str(attributes.get("usagetype", "")))
            and str(attributes.get("component", component)).lower() == component.lower()
        )

    usd = _on_demand_rate(
        clients.pricing, "AmazonSageMaker", filters, wanted, request, f"SageMaker {component}"
    )
    return HourlyPrice(
        usd_per_hour=usd, source=aws_source(clients, "Pricing API (AmazonSageMaker)", now)
    )


_SAGEMAKER_COMPONENTS = {"Train": "Training", "Host": "Hosting"}


def sagemaker_usage(request: CapacityRequest) -> str:
    """The SageMaker usage type the workload is billed under (USE1-Train:…, USE1-Host:…)."""
    return "Host" if request.workload in (Workload.INFERENCE, Workload.EVENT) else "Train"


def _on_demand_rate(
    pricing: PricingClient,
    service: str,
    filters: dict[str, str],
    wanted: Callable[[dict[str, Any]], bool],
    request: CapacityRequest,
    what: str,
) -> float:
    """The On-Demand USD per hour of the first wanted product with a non-zero hourly rate.

    Raises `PriceUnavailable` when the list has no such product, or shows only $0 (no
    published price, not a free instance)."""
    paginator = pricing.get_paginator("get_products")
    pages = paginator.paginate(
        ServiceCode=service,
        Filters=[{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()],
        FormatVersion="aws_v1",
    )
    zero = False
    for page in pages:
        for raw in page.get("PriceList", []):
            product = json.loads(raw) if isinstance(raw, str) else raw
            if not wanted(product.get("product", {}).get("attributes", {})):
                continue
            rates = _hourly_usd_rates(product)
            positive = [r for r in rates if r > 0]
            if positive:
                return float(positive[0])
            zero = zero or bool(rates)
    where = f"{request.instance_type} in {request.region}"
    if zero:
        raise PriceUnavailable(
            f"no published {what} On-Demand price for {where}: the AWS price list shows $0, "
            "which means no published price, not a free instance"
        )
    raise PriceUnavailable(f"no published {what} On-Demand price for {where} (AWS price list)")


def _hourly_usd_rates(product: dict[str, Any]) -> list[Decimal]:
    """The product's On-Demand USD rates per hour; other units and currencies are left out."""
    rates = []
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            if str(dimension.get("unit", "")).lower() not in HOURLY_UNITS:
                continue
            usd = dimension.get("pricePerUnit", {}).get(CURRENCY)
            try:
                rates.append(Decimal(str(usd)))
            except InvalidOperation:
                continue
    return rates


def spot(clients: AwsClients, request: CapacityRequest, now: datetime) -> HourlyPrice | None:
    """The cheapest current Spot price across Availability Zones."""
    latest: dict[str, tuple[datetime, float]] = {}
    paginator = clients.ec2.get_paginator("describe_spot_price_history")
    for page in paginator.paginate(
        InstanceTypes=[request.instance_type],  # type: ignore[list-item]
        ProductDescriptions=["Linux/UNIX"],
        StartTime=now - SPOT_LOOKBACK,
    ):
        for entry in page.get("SpotPriceHistory", []):
            zone = entry.get("AvailabilityZone", "")
            stamp = entry.get("Timestamp")
            price = float(entry.get("SpotPrice", "0"))
            if stamp is None or price <= 0:
                continue
            stamp = as_utc(stamp)
            if zone not in latest or stamp > latest[zone][0]:
                latest[zone] = (stamp, price)
    if not latest:
        return None
    zone, (_stamp, usd) = min(latest.items(), key=lambda item: item[1][1])
    return HourlyPrice(
        usd_per_hour=usd,
        zone=zone,
        source=aws_source(
            clients, f"DescribeSpotPriceHistory ({counted(len(latest), 'zone')})", now
        ),
    )
