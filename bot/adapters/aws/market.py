"""Offerings and prices for one request from boto3 clients, fetched concurrently.

The same code runs against live AWS and against the sandbox market (which answers on the
clients' `before-send` event, inside botocore's retry loop), so the sandbox exercises
exactly what production runs.
Hourly prices go through a cache with a TTL; reserved offerings are always fetched fresh.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.adapters.aws.counting import count_calls
from bot.adapters.aws.regions import UnknownRegion, partition_regions
from bot.domain import offering_rules as rules
from bot.domain.catalog import Catalog, InstanceType, PriceKind
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
from bot.domain.words import counted
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
# Every lookup of a quote (all regions searched) is answered within this, or goes without:
# one lookup alone can take two minutes with retries.
LOOKUP_TIMEOUT = timedelta(seconds=40)
# Which types a region sells changes rarely.
OFFERED_TTL = timedelta(hours=6)
# Price list dimensions billed per instance-hour. Other units on the same product (such as
# a training plan's upfront fee, unit "Quantity") are not an hourly rate.
HOURLY_UNITS = frozenset({"hrs", "hr", "hour", "hours"})
# Fees are compared in dollars; an offering priced in anything else is left out, not summed.
CURRENCY = "USD"
_PRICE_LABELS = {
    PriceKind.ON_DEMAND: "On-Demand",
    PriceKind.SAGEMAKER_ON_DEMAND: "SageMaker On-Demand",
    PriceKind.SPOT: "Spot",
}


class PriceUnavailable(Exception):
    """No hourly figure can be given; the message says why, for the user."""


class SkipOffering(Exception):
    """One offering cannot be read or compared; the message says why."""


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
    # The same services for the calls that buy without a client token: sent once, never
    # re-sent by the SDK (see clients.py).
    ec2_once: EC2Client
    sagemaker_once: SageMakerClient
    origin: Origin = Origin.LIVE  # LIVE for AWS, SANDBOX for the simulated market

    def __post_init__(self) -> None:
        for client in (self.ec2, self.sagemaker, self.pricing, self.ec2_once, self.sagemaker_once):
            count_calls(client)


class AwsMarket:
    """Fills a `MarketSnapshot` for a request; one instance serves many threads."""

    def __init__(
        self,
        clients_for: Callable[[str], AwsClients],
        catalog: Catalog,
        cache: PriceCache | None = None,
        price_ttl: timedelta = timedelta(minutes=15),
        max_workers: int = 16,
        timeout: timedelta = LOOKUP_TIMEOUT,
        home_region: str = "us-east-1",
    ) -> None:
        self._clients_for = clients_for
        self._regions = partition_regions(home_region)
        self._sold: dict[tuple[str, str], tuple[bool, float]] = {}
        self._sold_lock = threading.Lock()
        self._catalog = catalog
        self._cache = cache or NoCache()
        self._ttl = price_ttl
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="market")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def regions(self) -> tuple[str, ...]:
        """The regions of the partition the bot runs in."""
        return self._regions

    def offered_in(self, instance_type: str, region: str) -> bool | None:
        """Whether EC2 sells the type in the region (DescribeInstanceTypeOfferings,
        cached); None when it could not be told."""
        self._known(region)
        key = (instance_type, region)
        with self._sold_lock:
            hit = self._sold.get(key)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        try:
            pages = (
                self._clients_for(region)
                .ec2.get_paginator("describe_instance_type_offerings")
                .paginate(
                    LocationType="region",
                    Filters=[{"Name": "instance-type", "Values": [instance_type]}],
                )
            )
            sold = any(
                o.get("InstanceType") == instance_type
                for page in pages
                for o in page.get("InstanceTypeOfferings", [])
            )
        except (ClientError, BotoCoreError) as exc:
            log.warning("DescribeInstanceTypeOfferings in %s failed: %s", region, exc)
            return None
        with self._sold_lock:
            self._sold[key] = (sold, time.monotonic() + OFFERED_TTL.total_seconds())
        return sold

    def snapshot(self, request: CapacityRequest, now: datetime) -> MarketSnapshot:
        return self.snapshots([request], now)[0]

    def _known(self, region: str) -> None:
        """No client is made for a region string AWS does not have."""
        if region not in self._regions:
            raise UnknownRegion(f"{region} is not an AWS region of this partition")

    def snapshots(self, requests: Sequence[CapacityRequest], now: datetime) -> list[MarketSnapshot]:
        """One snapshot per request (one per region searched), every lookup of every
        request at once, all within one overall time limit: a lookup still out when it
        passes costs its option, not the quote."""
        futures = [
            {name: self._pool.submit(call) for name, call in self.calls(request, now).items()}
            for request in requests
        ]
        deadline = time.monotonic() + self._timeout.total_seconds()
        return [self._collect(batch, deadline) for batch in futures]

    def _collect(self, futures: dict[str, Future[Any]], deadline: float) -> MarketSnapshot:
        results: dict[str, Any] = {}
        errors: dict[str, str] = {}
        notes: dict[str, tuple[str, ...]] = {}
        for name, future in futures.items():
            try:
                results[name] = future.result(timeout=max(deadline - time.monotonic(), 0))
            except FutureTimeout:
                future.cancel()
                log.warning("market call %s had no answer in %s", name, self._timeout)
                errors[name] = (
                    f"no answer from AWS within {int(self._timeout.total_seconds())} s; "
                    "try again in a minute"
                )
            except PriceUnavailable as exc:
                errors[name] = str(exc)
            except (ClientError, BotoCoreError) as exc:
                log.warning("market call %s failed: %s", name, exc)
                errors[name] = _error_reason(name, exc)
            except Exception as exc:
                # One unreadable answer costs that option, not the whole quote.
                log.exception("market call %s failed", name)
                errors[name] = f"could not read the {name} answer ({type(exc).__name__})"
        for name in ("capacity-block", "training-plan"):
            found = results.get(name)
            if isinstance(found, Found) and found.skipped:
                notes[name] = found.skipped
        return MarketSnapshot(
            on_demand=results.get("on-demand"),
            sagemaker_on_demand=results.get("sagemaker-on-demand"),
            spot=results.get("spot"),
            capacity_blocks=tuple(results.get("capacity-block") or ()),
            training_plans=tuple(results.get("training-plan") or ()),
            errors=errors,
            notes=notes,
        )

    def calls(self, request: CapacityRequest, now: datetime) -> dict[str, Callable[[], Any]]:
        """The independent lookups one quote makes, by the snapshot field they fill."""
        self._known(request.region)
        clients = self._clients_for(request.region)
        instance = self._catalog.instance(request.instance_type)
        return {
            "on-demand": lambda: self._hourly(
                clients,
                PriceKind.ON_DEMAND,
                request,
                now,
                lambda: _ec2_on_demand(clients, request, now),
            ),
            "sagemaker-on-demand": lambda: self._hourly(
                clients,
                PriceKind.SAGEMAKER_ON_DEMAND,
                request,
                now,
                lambda: _sagemaker_on_demand(clients, request, now),
            ),
            "spot": lambda: self._hourly(
                clients, PriceKind.SPOT, request, now, lambda: _spot(clients, request, now)
            ),
            "capacity-block": lambda: self._offerings(
                clients,
                PriceKind.CAPACITY_BLOCK,
                request,
                _capacity_blocks(clients, request, now, instance),
            ),
            "training-plan": lambda: self._offerings(
                clients,
                PriceKind.TRAINING_PLAN,
                request,
                _training_plans(clients, request, now, instance),
            ),
        }

    def _estimate(self, clients: AwsClients, kind: PriceKind, request: CapacityRequest) -> bool:
        """Whether a figure the market answered is an estimate: the simulated market
        prices from the bundled catalog, so its figure is as good as the catalog's for
        that kind, type and region (estimates there are estimates here)."""
        if clients.origin is not Origin.SANDBOX:
            return False
        entry = self._catalog.price(kind, request.instance_type, request.region)
        return entry is None or entry.estimate

    def _offerings(
        self, clients: AwsClients, kind: PriceKind, request: CapacityRequest, found: Found
    ) -> Found:
        if not found or not self._estimate(clients, kind, request):
            return found
        marked = [
            o.model_copy(update={"source": o.source.model_copy(update={"estimate": True})})
            for o in found
        ]
        return Found(marked, list(found.skipped))

    def _hourly(
        self,
        clients: AwsClients,
        kind: PriceKind,
        request: CapacityRequest,
        now: datetime,
        fetch: Callable[[], HourlyPrice | None],
    ) -> HourlyPrice | None:
        """Cache, then the API, then the catalog's figure for the same region.

        An API that answers "no published price" (no product, or $0) is believed: the
        catalog is asked only when the lookup itself failed, and never for another
        region's figure. `PriceUnavailable` says why there is no figure.
        """
        # Sandbox and live figures never share an entry.
        key = f"{clients.origin.value}:{kind.value}:{request.region}:{request.instance_type}"
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
        failure: str | None = None
        try:
            price = fetch()
        except PriceUnavailable:
            raise
        except Exception as exc:  # a failed lookup: a labelled catalog figure is better
            log.warning("%s price lookup failed, trying the catalog: %s", kind.value, exc)
            price, failure = None, _aws_error(exc)
        if price is not None and self._estimate(clients, kind, request):
            source = price.source.model_copy(update={"estimate": True})
            price = price.model_copy(update={"source": source})
        if price is not None:
            self._cache.put_price(key, price, self._ttl)
            return price
        fallback = _catalog_price(self._catalog, kind, request, now)
        if fallback is None and failure is not None:
            raise PriceUnavailable(
                f"the {_PRICE_LABELS[kind]} price lookup failed ({failure}) and the catalog has "
                f"no figure for {request.instance_type} in {request.region}"
            )
        return fallback


def _catalog_price(
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


def _source(clients: AwsClients, detail: str, now: datetime) -> PriceSource:
    return PriceSource(origin=clients.origin, detail=detail, as_of=now)


def _utc(value: datetime) -> datetime:
    """botocore parses SageMaker's epoch times in the host's zone, EC2's in UTC: one zone."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# --- Pricing API ----------------------------------------------------------------------


def _ec2_on_demand(clients: AwsClients, request: CapacityRequest, now: datetime) -> HourlyPrice:
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
    return HourlyPrice(usd_per_hour=usd, source=_source(clients, "Pricing API (AmazonEC2)", now))


def _sagemaker_on_demand(
    clients: AwsClients, request: CapacityRequest, now: datetime
) -> HourlyPrice:
    filters = {"instanceName": f"ml.{request.instance_type}", "regionCode": request.region}
    usage = _sagemaker_usage(request)
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
        usd_per_hour=usd, source=_source(clients, "Pricing API (AmazonSageMaker)", now)
    )


_SAGEMAKER_COMPONENTS = {"Train": "Training", "Host": "Hosting"}


def _sagemaker_usage(request: CapacityRequest) -> str:
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
            stamp = _utc(stamp)
            if zone not in latest or stamp > latest[zone][0]:
                latest[zone] = (stamp, price)
    if not latest:
        return None
    zone, (_stamp, usd) = min(latest.items(), key=lambda item: item[1][1])
    return HourlyPrice(
        usd_per_hour=usd,
        zone=zone,
        source=_source(clients, f"DescribeSpotPriceHistory ({counted(len(latest), 'zone')})", now),
    )


# --- Reserved offerings ---------------------------------------------------------------


class Found(list[Offering]):
    """Offerings read from one search, and `skipped`: a line for each one left out."""

    def __init__(self, offerings: list[Offering] | None = None, skipped: list[str] | None = None):
        super().__init__(offerings or [])
        self.skipped = tuple(skipped or ())


def _read_all(raws: list[Any], read: Callable[[Any], Offering], label: str, id_field: str) -> Found:
    offerings: list[Offering] = []
    skipped: list[str] = []
    for raw in raws:
        try:
            offerings.append(read(raw))
        except SkipOffering as exc:
            name = raw.get(id_field) if isinstance(raw, dict) else None
            skipped.append(f"left out {label} offering {name or '(no id)'}: {exc}")
            log.warning("%s offering %s left out: %s", label, name, exc)
    return Found(offerings, skipped)


def _need(raw: dict[str, Any], field: str) -> Any:
    value = raw.get(field)
    if value is None or value == "":
        raise SkipOffering(f"AWS sent no {field}")
    return value


def upfront_fee(raw: dict[str, Any]) -> tuple[float, str]:
    """The upfront fee in USD, or `SkipOffering`: a fee in another currency is not summed.
    The same reading for offerings and for extension offerings."""
    text = _need(raw, "UpfrontFee")
    try:
        fee = Decimal(str(text))
    except InvalidOperation:
        raise SkipOffering(f"UpfrontFee {text!r} is not a number") from None
    if not fee.is_finite() or fee <= 0:
        raise SkipOffering(f"UpfrontFee {text!r} is not a price")
    currency = str(raw.get("CurrencyCode") or CURRENCY).upper()
    if currency != CURRENCY:
        raise SkipOffering(f"priced in {currency}; only {CURRENCY} fees are compared")
    return float(fee), currency


# --- Capacity Blocks ------------------------------------------------------------------


def _capacity_blocks(
    clients: AwsClients, request: CapacityRequest, now: datetime, instance: InstanceType
) -> Found:
    hours = rules.capacity_block_duration_for(request.duration_hours)
    if (
        hours is None
        or not instance.capacity_blocks.offered
        or request.environment is Environment.SAGEMAKER
        or request.count > rules.CB_MAX_INSTANCES_PER_BLOCK
        or rules.capacity_block_start_too_far(request.start, now)
    ):
        return Found()  # the comparison explains why; no point asking AWS
    start_from = max(request.start - START_SLACK, now)
    raws: list[Any] = []
    paginator = clients.ec2.get_paginator("describe_capacity_block_offerings")
    for page in paginator.paginate(
        InstanceType=request.instance_type,
        InstanceCount=request.count,
        CapacityDurationHours=hours,
        StartDateRange=start_from,
        EndDateRange=request.start + timedelta(hours=hours) + END_SLACK,
    ):
        raws.extend(page.get("CapacityBlockOfferings", []))
    return _read_all(
        raws,
        lambda raw: _capacity_block_offering(clients, raw, now),
        "Capacity Block",
        "CapacityBlockOfferingId",
    )


def _capacity_block_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    fee, currency = upfront_fee(raw)
    start, end = _utc(_need(raw, "StartDate")), _utc(_need(raw, "EndDate"))
    if end <= start:
        raise SkipOffering("it ends before it starts")
    hours = (
        _need(raw, "CapacityBlockDurationHours")
        + (raw.get("CapacityBlockDurationMinutes") or 0) / 60
    )
    instance_type, count = _need(raw, "InstanceType"), _need(raw, "InstanceCount")
    zone = raw.get("AvailabilityZone")
    part = OfferingPart(instance_type=instance_type, count=count, zone=zone, start=start, end=end)
    return Offering(
        kind=ReservationKind.CAPACITY_BLOCK,
        offering_id=_need(raw, "CapacityBlockOfferingId"),
        instance_type=instance_type,
        count=count,
        start=start,
        end=end,
        duration_hours=hours,
        upfront_usd=fee,
        currency=currency,
        zone=zone,
        zone_type=raw.get("ZoneType"),
        parts=(part,),
        source=_source(clients, "DescribeCapacityBlockOfferings", now),
    )


# --- Training plans -------------------------------------------------------------------


def _training_plans(
    clients: AwsClients, request: CapacityRequest, now: datetime, instance: InstanceType
) -> Found:
    hours = rules.training_plan_duration_for(request.duration_hours)
    count = rules.training_plan_count_for(request.count)
    if (
        hours is None
        or count is None
        or request.environment is Environment.EC2
        or not instance.training_plans.offered  # AWS would answer a ValidationException
    ):
        return Found()
    response = clients.sagemaker.search_training_plan_offerings(
        InstanceType=f"ml.{request.instance_type}",  # type: ignore[arg-type]
        InstanceCount=count,
        StartTimeAfter=max(request.start - START_SLACK, now),
        EndTimeBefore=request.start + timedelta(hours=hours) + END_SLACK,
        DurationHours=hours,
        TargetResources=[rules.training_plan_target(request.workload)],  # type: ignore[list-item]
    )
    return _read_all(
        list(response.get("TrainingPlanOfferings", [])),
        lambda raw: _training_plan_offering(clients, raw, now),
        "training plan",
        "TrainingPlanOfferingId",
    )


def _training_plan_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    fee, currency = upfront_fee(raw)
    raw_parts = raw.get("ReservedCapacityOfferings") or []
    if not raw_parts:
        raise SkipOffering("AWS sent no ReservedCapacityOfferings (no window to show)")
    parts = tuple(
        OfferingPart(
            instance_type=str(_need(p, "InstanceType")).removeprefix("ml."),
            count=_need(p, "InstanceCount"),
            zone=p.get("AvailabilityZone"),
            start=_utc(_need(p, "StartTime")),
            end=_utc(_need(p, "EndTime")),
        )
        for p in raw_parts
    )
    hours = _need(raw, "DurationHours") + (raw.get("DurationMinutes") or 0) / 60
    if hours <= 0:
        raise SkipOffering(f"DurationHours {hours} is not a duration")
    # Parts side by side in time add up; parts one after another do not.
    concurrent: dict[tuple[datetime, datetime], int] = {}
    for p in parts:
        concurrent[(p.start, p.end)] = concurrent.get((p.start, p.end), 0) + p.count
    return Offering(
        kind=ReservationKind.TRAINING_PLAN,
        offering_id=_need(raw, "TrainingPlanOfferingId"),
        instance_type=parts[0].instance_type,
        count=max(concurrent.values()),
        start=min(p.start for p in parts),
        end=max(p.end for p in parts),
        duration_hours=hours,
        upfront_usd=fee,
        currency=currency,
        zone=parts[0].zone,
        parts=parts,
        source=_source(clients, "SearchTrainingPlanOfferings", now),
    )


# Errors that say something about the account, not about this one call.
ACCOUNT_LIMIT_CODES = frozenset({"CapacityBlockDescribeLimitExceeded"})
# A search AWS refused as invalid: its message is for developers, not for the user.
REFUSED_SEARCH_CODES = frozenset(
    {"ValidationException", "InvalidParameterValue", "InvalidParameterCombination"}
)
_SEARCHES = {"capacity-block": "Capacity Block", "training-plan": "training plan"}


def _error_reason(name: str, exc: Exception) -> str:
    """What the user reads when a lookup failed (AWS's own text goes to the log)."""
    code = exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
    if code in REFUSED_SEARCH_CODES and name in _SEARCHES:
        return (
            f"AWS refused the {_SEARCHES[name]} search for this request ({code}): the type, "
            "count or window is not one it sells here"
        )
    if code in ACCOUNT_LIMIT_CODES:
        return (
            "this AWS account has reached its Capacity Block limit "
            f"({code}): EC2 answers this when the account's Capacity Block quota is used "
            "up or is 0; ask AWS (Service Quotas or your account team) to raise it"
        )
    return f"AWS said: {_aws_error(exc)}"


def _aws_error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}".strip()
    return str(exc)
