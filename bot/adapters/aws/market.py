"""Offerings and prices for one request from boto3 clients, fetched concurrently.

The same code runs against live AWS and against the sandbox market (which answers on the
clients' `before-send` event, inside botocore's retry loop), so the sandbox exercises
exactly what production runs.
Hourly prices go through a cache with a TTL; reserved offerings are always fetched fresh.
The sources are one module each: hourly_prices.py (Pricing API, Spot, catalog fallback),
capacity_block_offerings.py, training_plan_offerings.py; this module fans them out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.capacity_block_offerings import capacity_blocks
from bot.adapters.aws.hourly_prices import (
    PriceUnavailable,
    catalog_price,
    ec2_on_demand,
    sagemaker_on_demand,
    sagemaker_usage,
    spot,
)
from bot.adapters.aws.offerings import Found
from bot.adapters.aws.regions import UnknownRegion, partition_regions
from bot.adapters.aws.training_plan_offerings import training_plans
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.market import HourlyPrice, MarketSnapshot, Origin
from bot.domain.request import CapacityRequest
from bot.services.ports import PriceCache

# Callers name the market's clients and its "no figure" error from here.
__all__ = ["AwsClients", "AwsMarket", "NoCache", "PriceUnavailable"]

log = logging.getLogger(__name__)

# Every lookup of a quote (all regions searched) is answered within this, or goes without:
# one lookup alone can take two minutes with retries.
LOOKUP_TIMEOUT = timedelta(seconds=40)


# Which types a region sells changes rarely.
OFFERED_TTL = timedelta(hours=6)


_PRICE_LABELS = {
    PriceKind.ON_DEMAND: "On-Demand",
    PriceKind.SAGEMAKER_ON_DEMAND: "SageMaker On-Demand",
    PriceKind.SPOT: "Spot",
}


class NoCache:
    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None:
        return None

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None:
        return None


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
        searched: list[str] = []
        for name in ("capacity-block", "training-plan"):
            found = results.get(name)
            if isinstance(found, Found) and found.skipped:
                notes[name] = found.skipped
            if isinstance(found, Found) and found.asked:
                searched.append(name)
        return MarketSnapshot(
            on_demand=results.get("on-demand"),
            sagemaker_on_demand=results.get("sagemaker-on-demand"),
            spot=results.get("spot"),
            capacity_blocks=tuple(results.get("capacity-block") or ()),
            training_plans=tuple(results.get("training-plan") or ()),
            errors=errors,
            notes=notes,
            searched=tuple(searched),
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
                lambda: ec2_on_demand(clients, request, now),
            ),
            "sagemaker-on-demand": lambda: self._hourly(
                clients,
                PriceKind.SAGEMAKER_ON_DEMAND,
                request,
                now,
                lambda: sagemaker_on_demand(clients, request, now),
            ),
            "spot": lambda: self._hourly(
                clients, PriceKind.SPOT, request, now, lambda: spot(clients, request, now)
            ),
            "capacity-block": lambda: self._offerings(
                clients,
                PriceKind.CAPACITY_BLOCK,
                request,
                capacity_blocks(clients, request, now, instance),
            ),
            "training-plan": lambda: self._offerings(
                clients,
                PriceKind.TRAINING_PLAN,
                request,
                training_plans(clients, request, now, instance),
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
        return Found(marked, list(found.skipped), found.asked)

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
            key += f":{sagemaker_usage(request)}"  # training and hosting rates differ
        cached = self._cache.get_price(key)
        # The TTL on the given clock (a sandbox's may run ahead of the store's expiry, or
        # be set back): a figure older than it, or from "the future", is asked again.
        if cached is not None and timedelta(0) <= now - cached[1] < self._ttl:
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
        fallback = catalog_price(self._catalog, kind, request, now)
        if fallback is None and failure is not None:
            raise PriceUnavailable(
                f"the {_PRICE_LABELS[kind]} price lookup failed ({failure}) and the catalog has "
                f"no figure for {request.instance_type} in {request.region}"
            )
        return fallback


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
