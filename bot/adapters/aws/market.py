"""Offerings and prices for one request from boto3 clients, fetched concurrently.

The same code runs against live AWS and against the sandbox market (which answers on the
clients' `before-call` event), so the sandbox exercises exactly what production runs.
Hourly prices go through a cache with a TTL; reserved offerings are always fetched fresh.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.domain import offering_rules as rules
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.market import (
    HourlyPrice,
    MarketSnapshot,
    Offering,
    OfferingPart,
    Origin,
    PriceSource,
    ReservationKind,
)
from bot.domain.request import CapacityRequest, Environment, Workload
from bot.services.ports import PriceCache

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sagemaker import SageMakerClient

log = logging.getLogger(__name__)

# How far around the wanted start to look for reserved offerings.
START_SLACK = timedelta(days=1)
END_SLACK = timedelta(days=2)
SPOT_LOOKBACK = timedelta(hours=3)
TARGET_RESOURCE = {
    Workload.TRAINING: "training-job",
    Workload.EVALUATION: "training-job",
    Workload.INFERENCE: "endpoint",
    Workload.EVENT: "endpoint",
}


class NoCache:
    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None:
        return None

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None:
        return None


@dataclass(frozen=True)
class AwsClients:
    ec2: EC2Client
    sagemaker: SageMakerClient
    pricing: PricingClient  # the Pricing API lives in us-east-1 whatever the region
    origin: Origin = Origin.LIVE  # LIVE for AWS, SANDBOX for the simulated market


class AwsMarket:
    """Fills a `MarketSnapshot` for a request; one instance serves many threads."""

    def __init__(
        self,
        clients_for: Callable[[str], AwsClients],
        catalog: Catalog,
        cache: PriceCache | None = None,
        price_ttl: timedelta = timedelta(minutes=15),
        max_workers: int = 8,
    ) -> None:
        self._clients_for = clients_for
        self._catalog = catalog
        self._cache = cache or NoCache()
        self._ttl = price_ttl
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="market")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def snapshot(self, request: CapacityRequest, now: datetime) -> MarketSnapshot:
        futures: dict[str, Future[Any]] = {
            name: self._pool.submit(call) for name, call in self.calls(request, now).items()
        }
        results: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except (ClientError, BotoCoreError) as exc:
                log.warning("market call %s failed: %s", name, exc)
                errors[name] = f"AWS said: {_aws_error(exc)}"
            except Exception as exc:
                # One unreadable answer costs that option, not the whole quote.
                log.exception("market call %s failed", name)
                errors[name] = f"could not read the {name} answer ({type(exc).__name__})"
        return MarketSnapshot(
            on_demand=results.get("on-demand"),
            sagemaker_on_demand=results.get("sagemaker-on-demand"),
            spot=results.get("spot"),
            capacity_blocks=tuple(results.get("capacity-block") or ()),
            training_plans=tuple(results.get("training-plan") or ()),
            errors=errors,
        )

    def calls(self, request: CapacityRequest, now: datetime) -> dict[str, Callable[[], Any]]:
        """The independent lookups one quote makes, by the snapshot field they fill."""
        clients = self._clients_for(request.region)
        return {
            "on-demand": lambda: self._hourly(
                PriceKind.ON_DEMAND, request, now, lambda: _ec2_on_demand(clients, request, now)
            ),
            "sagemaker-on-demand": lambda: self._hourly(
                PriceKind.SAGEMAKER_ON_DEMAND,
                request,
                now,
                lambda: _sagemaker_on_demand(clients, request, now),
            ),
            "spot": lambda: self._hourly(
                PriceKind.SPOT, request, now, lambda: _spot(clients, request, now)
            ),
            "capacity-block": lambda: _capacity_blocks(clients, request, now),
            "training-plan": lambda: _training_plans(clients, request, now),
        }

    def _hourly(
        self,
        kind: PriceKind,
        request: CapacityRequest,
        now: datetime,
        fetch: Callable[[], HourlyPrice | None],
    ) -> HourlyPrice | None:
        """Cache, then the API, then the catalog: the first that has a figure wins."""
        key = f"{kind.value}:{request.region}:{request.instance_type}"
        if kind is PriceKind.SAGEMAKER_ON_DEMAND:
            key += f":{_sagemaker_usage(request)}"  # training and hosting rates differ
        cached = self._cache.get_price(key)
        if cached is not None:
            hit, stored_at = cached
            age = int((now - stored_at).total_seconds())
            source = hit.source.model_copy(
                update={"origin": Origin.CACHE, "age_seconds": max(age, 0)}
            )
            return hit.model_copy(update={"source": source})
        price: HourlyPrice | None
        try:
            price = fetch()
        except Exception as exc:  # any failure: the labelled catalog figure is better than none
            log.warning("%s price lookup failed, using the catalog: %s", kind.value, exc)
            price = None
        if price is not None:
            self._cache.put_price(key, price, self._ttl)
            return price
        return _catalog_price(self._catalog, kind, request, now)


def _catalog_price(
    catalog: Catalog, kind: PriceKind, request: CapacityRequest, now: datetime
) -> HourlyPrice | None:
    entry = catalog.price(kind, request.instance_type, request.region)
    if entry is None:
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


def _source(clients: AwsClients, detail: str, now: datetime) -> PriceSource:
    return PriceSource(origin=clients.origin, detail=detail, as_of=now)


# --- Pricing API ----------------------------------------------------------------------


def _ec2_on_demand(
    clients: AwsClients, request: CapacityRequest, now: datetime
) -> HourlyPrice | None:
    filters = {
        "instanceType": request.instance_type,
        "regionCode": request.region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    usd = _first_on_demand_usd(clients.pricing, "AmazonEC2", filters, usage_hint=None)
    if usd is None:
        return None
    return HourlyPrice(usd_per_hour=usd, source=_source(clients, "Pricing API (AmazonEC2)", now))


def _sagemaker_on_demand(
    clients: AwsClients, request: CapacityRequest, now: datetime
) -> HourlyPrice | None:
    filters = {"instanceName": f"ml.{request.instance_type}", "regionCode": request.region}
    hint = _sagemaker_usage(request)
    usd = _first_on_demand_usd(clients.pricing, "AmazonSageMaker", filters, usage_hint=hint)
    if usd is None:
        return None
    return HourlyPrice(
        usd_per_hour=usd, source=_source(clients, "Pricing API (AmazonSageMaker)", now)
    )


def _sagemaker_usage(request: CapacityRequest) -> str:
    """The SageMaker usage type the workload is billed under (USE1-Train:…, USE1-Host:…)."""
    return "Host" if request.workload in (Workload.INFERENCE, Workload.EVENT) else "Train"


def _first_on_demand_usd(
    pricing: PricingClient, service: str, filters: dict[str, str], usage_hint: str | None
) -> float | None:
    """The On-Demand USD price of the first product that matches (and the usage hint)."""
    paginator = pricing.get_paginator("get_products")
    pages = paginator.paginate(
        ServiceCode=service,
        Filters=[{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()],
        FormatVersion="aws_v1",
    )
    for page in pages:
        for raw in page.get("PriceList", []):
            product = json.loads(raw) if isinstance(raw, str) else raw
            usage = str(product.get("product", {}).get("attributes", {}).get("usagetype", ""))
            if usage_hint and usage_hint.lower() not in usage.lower():
                continue
            usd = _on_demand_usd(product)
            if usd is not None and usd > 0:
                return usd
    return None


def _on_demand_usd(product: dict[str, Any]) -> float | None:
    """The first non-zero On-Demand USD figure (a zero-priced dimension is not the rate)."""
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is not None and float(usd) > 0:
                return float(usd)
    return None


# --- Spot -----------------------------------------------------------------------------


def _spot(clients: AwsClients, request: CapacityRequest, now: datetime) -> HourlyPrice | None:
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
            if zone not in latest or stamp > latest[zone][0]:
                latest[zone] = (stamp, price)
    if not latest:
        return None
    zone, (_stamp, usd) = min(latest.items(), key=lambda item: item[1][1])
    return HourlyPrice(
        usd_per_hour=usd,
        zone=zone,
        source=_source(clients, f"DescribeSpotPriceHistory ({len(latest)} zones)", now),
    )


# --- Capacity Blocks ------------------------------------------------------------------


def _capacity_blocks(
    clients: AwsClients, request: CapacityRequest, now: datetime
) -> list[Offering]:
    hours = rules.capacity_block_duration_for(request.duration_hours)
    if (
        hours is None
        or request.environment is Environment.SAGEMAKER
        or request.count > rules.CB_MAX_INSTANCES_PER_BLOCK
        or rules.capacity_block_start_too_far(request.start, now)
    ):
        return []  # the comparison explains why; no point asking AWS
    start_from = max(request.start - START_SLACK, now)
    offerings: list[Offering] = []
    paginator = clients.ec2.get_paginator("describe_capacity_block_offerings")
    for page in paginator.paginate(
        InstanceType=request.instance_type,
        InstanceCount=request.count,
        CapacityDurationHours=hours,
        StartDateRange=start_from,
        EndDateRange=request.start + timedelta(hours=hours) + END_SLACK,
        AllAvailabilityZones=True,
    ):
        for raw in page.get("CapacityBlockOfferings", []):
            offerings.append(_capacity_block_offering(clients, raw, now))
    return offerings


def _capacity_block_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    hours = raw["CapacityBlockDurationHours"] + raw.get("CapacityBlockDurationMinutes", 0) / 60
    zone = raw.get("AvailabilityZone")
    part = OfferingPart(
        instance_type=raw["InstanceType"],
        count=raw["InstanceCount"],
        zone=zone,
        start=raw["StartDate"],
        end=raw["EndDate"],
    )
    return Offering(
        kind=ReservationKind.CAPACITY_BLOCK,
        offering_id=raw["CapacityBlockOfferingId"],
        instance_type=raw["InstanceType"],
        count=raw["InstanceCount"],
        start=raw["StartDate"],
        end=raw["EndDate"],
        duration_hours=hours,
        upfront_usd=float(raw["UpfrontFee"]),
        currency=raw.get("CurrencyCode", "USD"),
        zone=zone,
        parts=(part,),
        source=_source(clients, "DescribeCapacityBlockOfferings", now),
    )


# --- Training plans -------------------------------------------------------------------


def _training_plans(clients: AwsClients, request: CapacityRequest, now: datetime) -> list[Offering]:
    hours = rules.training_plan_duration_for(request.duration_hours)
    count = rules.training_plan_count_for(request.count)
    if hours is None or count is None or request.environment is Environment.EC2:
        return []
    response = clients.sagemaker.search_training_plan_offerings(
        InstanceType=f"ml.{request.instance_type}",  # type: ignore[arg-type]
        InstanceCount=count,
        StartTimeAfter=max(request.start - START_SLACK, now),
        EndTimeBefore=request.start + timedelta(hours=hours) + END_SLACK,
        DurationHours=hours,
        TargetResources=[TARGET_RESOURCE[request.workload]],  # type: ignore[list-item]
    )
    return [
        _training_plan_offering(clients, raw, now)
        for raw in response.get("TrainingPlanOfferings", [])
        if raw.get("ReservedCapacityOfferings")  # without parts there is no window to show
    ]


def _training_plan_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    parts = tuple(
        OfferingPart(
            instance_type=p["InstanceType"].removeprefix("ml."),
            count=p["InstanceCount"],
            zone=p.get("AvailabilityZone"),
            start=p["StartTime"],
            end=p["EndTime"],
        )
        for p in raw.get("ReservedCapacityOfferings", [])
    )
    hours = raw.get("DurationHours", 0) + raw.get("DurationMinutes", 0) / 60
    # Parts side by side in time add up; parts one after another do not.
    concurrent: dict[tuple[datetime, datetime], int] = {}
    for p in parts:
        concurrent[(p.start, p.end)] = concurrent.get((p.start, p.end), 0) + p.count
    count = max(concurrent.values(), default=0)
    return Offering(
        kind=ReservationKind.TRAINING_PLAN,
        offering_id=raw["TrainingPlanOfferingId"],
        instance_type=parts[0].instance_type if parts else "",
        count=count,
        start=min(p.start for p in parts),
        end=max(p.end for p in parts),
        duration_hours=hours,
        upfront_usd=float(raw["UpfrontFee"]),
        currency=raw.get("CurrencyCode", "USD"),
        zone=parts[0].zone if parts else None,
        parts=parts,
        source=_source(clients, "SearchTrainingPlanOfferings", now),
    )


def _aws_error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}".strip()
    return str(exc)
