"""The live-source market adapter (`AwsMarket` on real boto3 clients, not the sandbox).

moto answers what it implements (DescribeSpotPriceHistory, with a fake constant price);
botocore's Stubber answers what moto lacks (Pricing, Capacity Block offerings, training
plan offerings) and pins the exact parameters the adapter sends; retries are proven one
layer lower, on raw HTTP responses, because Stubber answers before the retry handler runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

import pytest
from botocore.exceptions import ClientError
from botocore.retries import standard
from botocore.stub import Stubber
from moto import mock_aws

from bot.adapters.aws.clients import RETRIES, clients_factory
from bot.adapters.aws.market import AwsClients, AwsMarket
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.config import Settings
from bot.domain.catalog import default_catalog
from bot.domain.market import Offering, Origin, ReservationKind
from bot.domain.request import CapacityRequest, Environment, Workload
from bot.services.ports import PriceCache
from tests.aws_live import (
    REGION,
    HttpReplies,
    Reply,
    Responder,
    ec2_error,
    json_error,
    live_clients,
)
from tests.conftest import NOW

TYPE = "p5.48xlarge"
START = NOW + timedelta(days=10)  # 2026-12-10 04:00 UTC
CATALOG_ON_DEMAND = 55.04  # bot/domain/data/prices.json, p5.48xlarge, us-east-1


def make_request(**changes: Any) -> CapacityRequest:
    fields: dict[str, Any] = {
        "count": 4,
        "instance_type": TYPE,
        "duration_hours": 48,
        "start": START,
        "region": REGION,
        "environment": None,
        "workload": Workload.TRAINING,
    }
    return CapacityRequest(**(fields | changes))


MarketFactory = Callable[..., AwsMarket]


@pytest.fixture
def clients() -> AwsClients:
    return live_clients()


@pytest.fixture
def make_market(clients: AwsClients) -> Iterator[MarketFactory]:
    made: list[AwsMarket] = []

    def make(cache: PriceCache | None = None, on: AwsClients | None = None) -> AwsMarket:
        market = AwsMarket(lambda _region: on or clients, default_catalog(), cache=cache)
        made.append(market)
        return market

    yield make
    for market in made:
        market.close()


@pytest.fixture
def backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's retry backoff without the wait: each delay is computed at full jitter
    (random() = 1, so the figure is the cap of its step) and recorded; 0 is slept."""
    delays: list[float] = []
    original = standard.ExponentialBackoff.delay_amount

    def no_wait(self: standard.ExponentialBackoff, context: Any) -> float:
        self._random = lambda: 1.0  # type: ignore[attr-defined]
        delays.append(original(self, context))
        return 0.0

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", no_wait)
    return delays


# --- canned AWS data ------------------------------------------------------------------


def _dimension(sku: str, term: str, rate: str, usd: str, description: str) -> dict[str, Any]:
    return {
        "unit": "Hrs",
        "endRange": "Inf",
        "description": description,
        "appliesTo": [],
        "rateCode": f"{sku}.{term}.{rate}",
        "beginRange": "0",
        "pricePerUnit": {"USD": usd},
    }


def ec2_product(sku: str, on_demand_usd: list[str], reserved_usd: str = "61.1200000000") -> str:
    """One AmazonEC2 price list item as GetProducts returns it: a JSON string."""
    od_term = "JRTCKXETXF"
    ri_term = "4NA7Y494T4"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": TYPE,
                    "regionCode": REGION,
                    "location": "US East (N. Virginia)",
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "marketoption": "OnDemand",
                    "licenseModel": "No License required",
                    "usagetype": "BoxUsage:p5.48xlarge",
                    "operation": "RunInstances",
                    "gpu": "8",
                    "vcpu": "192",
                    "servicecode": "AmazonEC2",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.{od_term}": {
                        "priceDimensions": {
                            f"{sku}.{od_term}.{rate}": _dimension(
                                sku, od_term, rate, usd, f"${usd} per On Demand Linux {TYPE}"
                            )
                            for rate, usd in zip(
                                ("6YS6EN2CT7", "Q7UJUT2CE6"), on_demand_usd, strict=False
                            )
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": od_term,
                        "termAttributes": {},
                    }
                },
                "Reserved": {
                    f"{sku}.{ri_term}": {
                        "priceDimensions": {
                            f"{sku}.{ri_term}.6YS6EN2CT7": _dimension(
                                sku, ri_term, "6YS6EN2CT7", reserved_usd, "Linux 1yr No Upfront"
                            )
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": ri_term,
                        "termAttributes": {
                            "LeaseContractLength": "1yr",
                            "OfferingClass": "standard",
                            "PurchaseOption": "No Upfront",
                        },
                    }
                },
            },
            "version": "20261120190347",
            "publicationDate": "2026-11-20T19:03:47Z",
        }
    )


def sagemaker_product(sku: str, usage: str, component: str, usd: str) -> str:
    """One AmazonSageMaker price list item; `usage` like "Train", "Host", "Tsform"."""
    term = "JRTCKXETXF"
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {
                    "regionCode": REGION,
                    "location": "US East (N. Virginia)",
                    "instanceName": f"ml.{TYPE}",
                    "instanceType": f"ml.{TYPE}",
                    "usagetype": f"USE1-{usage}:ml.{TYPE}",
                    "operation": "RunInstance",
                    "component": component,
                    "gpu": "8",
                    "vCpu": "192",
                    "servicecode": "AmazonSageMaker",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    f"{sku}.{term}": {
                        "priceDimensions": {
                            f"{sku}.{term}.6YS6EN2CT7": _dimension(
                                sku, term, "6YS6EN2CT7", usd, f"${usd} per {component} hour"
                            )
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": term,
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261120190347",
            "publicationDate": "2026-11-20T19:03:47Z",
        }
    )


EC2_FILTERS = [
    {"Type": "TERM_MATCH", "Field": "instanceType", "Value": TYPE},
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
    {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
    {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
    {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
    {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
    {"Type": "TERM_MATCH", "Field": "marketoption", "Value": "OnDemand"},
]
SAGEMAKER_FILTERS = [
    {"Type": "TERM_MATCH", "Field": "instanceName", "Value": f"ml.{TYPE}"},
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
]
EC2_USD = "98.3200000000"
TRAIN_USD = "76.7050000000"
HOST_USD = "79.3000000000"
TSFORM_USD = "74.1200000000"


def ec2_price_list() -> list[str]:
    return [ec2_product("JZQ8KF8TMVS3VNGF", [EC2_USD])]


def sagemaker_price_list() -> list[str]:
    return [
        sagemaker_product("2Q5W5B3TSFM3VXDT", "Tsform", "Batch Transform", TSFORM_USD),
        sagemaker_product("8KTQGXW9AXJ9YBG5", "Host", "Hosting", HOST_USD),
        sagemaker_product("QEJ6E7DUMR4NKQ6N", "Train", "Training", TRAIN_USD),
    ]


def get_products(params: dict[str, Any]) -> dict[str, Any]:
    if params["ServiceCode"] == "AmazonEC2":
        return {"FormatVersion": "aws_v1", "PriceList": ec2_price_list()}
    return {"FormatVersion": "aws_v1", "PriceList": sagemaker_price_list()}


def spot_entry(zone: str, usd: str, at: datetime) -> dict[str, Any]:
    return {
        "AvailabilityZone": zone,
        "InstanceType": TYPE,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": usd,
        "Timestamp": at,
    }


def block_offering(
    offering_id: str,
    zone: str,
    start: datetime,
    hours: int,
    minutes: int,
    fee: str,
    count: int = 4,
) -> dict[str, Any]:
    return {
        "CapacityBlockOfferingId": offering_id,
        "InstanceType": TYPE,
        "AvailabilityZone": zone,
        "InstanceCount": count,
        "StartDate": start,
        "EndDate": start + timedelta(hours=hours, minutes=minutes),
        "CapacityBlockDurationHours": hours,
        "CapacityBlockDurationMinutes": minutes,
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
        "Tenancy": "default",
    }


def plan_part(zone: str, count: int, start: datetime, hours: int) -> dict[str, Any]:
    return {
        "ReservedCapacityType": "Instance",
        "InstanceType": f"ml.{TYPE}",
        "InstanceCount": count,
        "AvailabilityZone": zone,
        "DurationHours": hours,
        "DurationMinutes": 0,
        "StartTime": start,
        "EndTime": start + timedelta(hours=hours),
    }


def plan_offering(
    offering_id: str, fee: str, hours: int, parts: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "TrainingPlanOfferingId": offering_id,
        "TargetResources": ["training-job"],
        "DurationHours": hours,
        "DurationMinutes": 0,
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
        "ReservedCapacityOfferings": parts,
    }


BLOCK_START = datetime(2026, 12, 9, 11, 30, tzinfo=UTC)


def full_market(responder: Responder) -> Responder:
    """Answers for every call of one snapshot."""
    return (
        responder.add("GetProducts", get_products)
        .add(
            "DescribeSpotPriceHistory",
            {"SpotPriceHistory": [spot_entry("us-east-1b", "21.4770", NOW - timedelta(hours=1))]},
        )
        .add(
            "DescribeCapacityBlockOfferings",
            {
                "CapacityBlockOfferings": [
                    block_offering(
                        "cb-0a1b2c3d4e5f60718", "us-east-1a", BLOCK_START, 48, 0, "13291.39"
                    )
                ]
            },
        )
        .add(
            "SearchTrainingPlanOfferings",
            {
                "TrainingPlanOfferings": [
                    plan_offering(
                        "tpo-SHA256-abc",
                        "9920.00",
                        48,
                        [plan_part("us-east-1a", 4, BLOCK_START, 48)],
                    )
                ]
            },
        )
    )


# --- 1. Spot --------------------------------------------------------------------------


def test_spot_from_moto_is_live_and_sends_the_documented_filters(
    make_market: MarketFactory,
) -> None:
    with mock_aws():
        clients = live_clients()
        sent: list[dict[str, Any]] = []
        clients.ec2.meta.events.register(
            "before-parameter-build.ec2.DescribeSpotPriceHistory",
            lambda params, **_: sent.append(dict(params)),
        )
        history = clients.ec2.describe_spot_price_history(InstanceTypes=["p5.48xlarge"])
        zones = {e["AvailabilityZone"] for e in history["SpotPriceHistory"]}
        sent.clear()
        price = make_market(on=clients).calls(make_request(), NOW)["spot"]()

    assert sent == [
        {
            "InstanceTypes": [TYPE],
            "ProductDescriptions": ["Linux/UNIX"],
            "StartTime": NOW - timedelta(hours=3),
        }
    ]
    assert len(zones) > 1  # moto offers p5.48xlarge in several us-east-1 zones
    assert price is not None
    assert price.usd_per_hour == pytest.approx(0.00001)  # moto's constant, from a string
    assert price.zone in zones
    assert price.source.origin is Origin.LIVE
    assert price.source.detail == f"DescribeSpotPriceHistory ({len(zones)} zones)"
    assert price.source.as_of == NOW


def test_spot_takes_the_latest_price_per_zone_then_the_cheapest_zone(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    # moto's fake history is one constant per zone, so the choice is pinned with Stubber.
    # AWS lists history newest first; the adapter must compare timestamps, not order.
    params = {
        "InstanceTypes": [TYPE],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": NOW - timedelta(hours=3),
    }
    h = timedelta(hours=1)
    page_1 = {
        "SpotPriceHistory": [
            spot_entry("us-east-1a", "24.1000", NOW - 1 * h),  # latest in a
            spot_entry("us-east-1b", "23.9000", NOW - 1 * h),  # latest in b
            spot_entry("us-east-1b", "12.0000", NOW - 3 * h),  # old and cheap: not current
            spot_entry("us-east-1c", "0.0000", NOW - h / 2),  # no price: ignored
        ],
        "NextToken": "page-2",
    }
    page_2 = {
        "SpotPriceHistory": [
            spot_entry("us-east-1c", "22.5000", NOW - 2 * h),  # c's only real price
            spot_entry("us-east-1a", "21.0000", NOW - 4 * h),  # older than a's 24.10
            spot_entry("us-east-1d", "25.0000", NOW - 2 * h),
        ]
    }
    with Stubber(clients.ec2) as stub:
        stub.add_response("describe_spot_price_history", page_1, params)
        stub.add_response("describe_spot_price_history", page_2, params | {"NextToken": "page-2"})
        price = make_market().calls(make_request(), NOW)["spot"]()
        stub.assert_no_pending_responses()

    assert price is not None
    assert (price.zone, price.usd_per_hour) == ("us-east-1c", 22.5)
    assert price.source.detail == "DescribeSpotPriceHistory (4 zones)"
    assert price.source.origin is Origin.LIVE


def test_spot_with_no_history_falls_back_to_the_catalog(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    with Stubber(clients.ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
        price = make_market().calls(make_request(), NOW)["spot"]()
        stub.assert_no_pending_responses()
    assert price is not None
    assert price.source.origin is Origin.CATALOG
    assert price.source.estimate


# --- 2. Pricing API -------------------------------------------------------------------


def test_ec2_on_demand_from_the_pricing_api(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    params = {"ServiceCode": "AmazonEC2", "Filters": EC2_FILTERS, "FormatVersion": "aws_v1"}
    page_1 = {
        "FormatVersion": "aws_v1",
        # A product with nothing but a zero-priced dimension: not a price.
        "PriceList": [ec2_product("ZZZZZZZZZZZZZZZZ", ["0.0000000000"])],
        "NextToken": "page-2",
    }
    page_2 = {
        "FormatVersion": "aws_v1",
        # A zero-priced dimension before the real one; the Reserved term is not On-Demand.
        "PriceList": [ec2_product("JZQ8KF8TMVS3VNGF", ["0.0000000000", EC2_USD])],
    }
    with Stubber(clients.pricing) as stub:
        stub.add_response("get_products", page_1, params)
        stub.add_response("get_products", page_2, params | {"NextToken": "page-2"})
        price = make_market().calls(make_request(), NOW)["on-demand"]()
        stub.assert_no_pending_responses()

    assert price is not None
    assert price.usd_per_hour == 98.32
    assert price.source.origin is Origin.LIVE
    assert price.source.detail == "Pricing API (AmazonEC2)"
    assert price.source.as_of == NOW
    assert price.zone is None


@pytest.mark.parametrize(
    ("workload", "usd"),
    [
        (Workload.TRAINING, 76.705),
        (Workload.EVALUATION, 76.705),
        (Workload.INFERENCE, 79.3),
        (Workload.EVENT, 79.3),
    ],
)
def test_sagemaker_on_demand_picks_the_product_for_the_workload(
    clients: AwsClients, make_market: MarketFactory, workload: Workload, usd: float
) -> None:
    params = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": SAGEMAKER_FILTERS,
        "FormatVersion": "aws_v1",
    }
    tsform, host, train = sagemaker_price_list()
    # The wanted product comes last, after the other workload's, across two pages.
    first, wanted = (
        (host, train)
        if workload in (Workload.TRAINING, Workload.EVALUATION)
        else (
            train,
            host,
        )
    )
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": [tsform, first], "NextToken": "p2"},
            params,
        )
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": [wanted]},
            params | {"NextToken": "p2"},
        )
        price = make_market().calls(make_request(workload=workload), NOW)["sagemaker-on-demand"]()
        stub.assert_no_pending_responses()

    assert price is not None
    assert price.usd_per_hour == usd
    assert price.source.origin is Origin.LIVE
    assert price.source.detail == "Pricing API (AmazonSageMaker)"


def test_pricing_stops_at_the_first_page_with_a_price(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": ec2_price_list(), "NextToken": "more"},
        )
        price = make_market().calls(make_request(), NOW)["on-demand"]()
        stub.assert_no_pending_responses()
    assert price is not None and price.usd_per_hour == 98.32


def test_on_demand_falls_back_to_the_catalog_when_the_lookup_fails(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    with Stubber(clients.pricing) as stub:
        stub.add_client_error(
            "get_products", "AccessDeniedException", "not authorized to pricing:GetProducts"
        )
        price = make_market().calls(make_request(), NOW)["on-demand"]()
        stub.assert_no_pending_responses()
    assert price is not None
    assert price.usd_per_hour == CATALOG_ON_DEMAND
    assert price.source.origin is Origin.CATALOG
    assert price.source.as_of == NOW


# --- 3. Capacity Blocks ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration_hours", "block_hours"),
    [
        (1, 24),
        (30, 48),  # whole days, rounded up
        (14 * 24, 14 * 24),  # 1-day steps up to 14 days
        (14 * 24 + 1, 21 * 24),  # then 7-day steps
        (20 * 24, 21 * 24),
        (182 * 24, 182 * 24),
    ],
)
def test_capacity_block_duration_is_a_valid_block(
    clients: AwsClients, make_market: MarketFactory, duration_hours: int, block_hours: int
) -> None:
    request = make_request(duration_hours=duration_hours, environment=Environment.EC2)
    with Stubber(clients.ec2) as stub:
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": []},
            {
                "InstanceType": TYPE,
                "InstanceCount": 4,
                "CapacityDurationHours": block_hours,
                "StartDateRange": datetime(2026, 12, 9, 4, 0, tzinfo=UTC),
                "EndDateRange": START + timedelta(hours=block_hours, days=2),
            },
        )
        assert make_market().calls(request, NOW)["capacity-block"]() == []
        stub.assert_no_pending_responses()


def test_capacity_block_offerings_over_two_pages(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    # Starts in 12 hours: the search cannot start a day earlier than now.
    request = make_request(start=NOW + timedelta(hours=12), duration_hours=30, count=2)
    params = {
        "InstanceType": TYPE,
        "InstanceCount": 2,
        "CapacityDurationHours": 48,
        "StartDateRange": NOW,
        "EndDateRange": datetime(2026, 12, 4, 16, 0, tzinfo=UTC),
    }
    first = block_offering(
        "cb-0a1b2c3d4e5f60718", "us-east-1a", NOW + timedelta(hours=12), 47, 30, "6645.69", 2
    )
    second = block_offering(
        "cb-0f9e8d7c6b5a40312",
        "us-east-1d",
        datetime(2026, 12, 1, 11, 30, tzinfo=UTC),
        48,
        0,
        "6712.21",
        2,
    )
    with Stubber(clients.ec2) as stub:
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": [first], "NextToken": "next-page"},
            params,
        )
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": [second]},
            params | {"NextToken": "next-page"},
        )
        offerings = make_market().calls(request, NOW)["capacity-block"]()
        stub.assert_no_pending_responses()

    assert [o.offering_id for o in offerings] == ["cb-0a1b2c3d4e5f60718", "cb-0f9e8d7c6b5a40312"]
    one: Offering = offerings[0]
    assert one.kind is ReservationKind.CAPACITY_BLOCK
    assert one.duration_hours == 47.5  # hours and minutes: the start is not on the hour
    assert one.upfront_usd == 6645.69  # UpfrontFee is a string
    assert one.currency == "USD"
    assert (one.instance_type, one.count, one.zone) == (TYPE, 2, "us-east-1a")
    assert (one.start, one.end) == (first["StartDate"], first["EndDate"])
    assert [(p.zone, p.count, p.start, p.end) for p in one.parts] == [
        ("us-east-1a", 2, first["StartDate"], first["EndDate"])
    ]
    assert one.hourly_usd == pytest.approx(6645.69 / (2 * 47.5))
    assert one.source.origin is Origin.LIVE
    assert one.source.detail == "DescribeCapacityBlockOfferings"
    assert offerings[1].zone == "us-east-1d"
    assert offerings[1].duration_hours == 48


@pytest.mark.parametrize(
    "changes",
    [
        {"environment": Environment.SAGEMAKER},
        {"count": 65},
        {"start": NOW + timedelta(weeks=8, hours=1)},
        {"duration_hours": 183 * 24},
    ],
    ids=["sagemaker", "over-64-instances", "over-8-weeks-ahead", "over-182-days"],
)
def test_no_capacity_block_call_when_a_block_cannot_fit(
    clients: AwsClients, make_market: MarketFactory, changes: dict[str, Any]
) -> None:
    with Stubber(clients.ec2):  # nothing queued: any call raises
        assert make_market().calls(make_request(**changes), NOW)["capacity-block"]() == []


def test_a_block_exactly_8_weeks_ahead_is_still_searched(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    with Stubber(clients.ec2) as stub:
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []})
        make_market().calls(make_request(start=NOW + timedelta(weeks=8)), NOW)["capacity-block"]()
        stub.assert_no_pending_responses()


# --- 4. Training plans ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "target"),
    [
        (Workload.TRAINING, "training-job"),
        (Workload.EVALUATION, "training-job"),
        (Workload.INFERENCE, "endpoint"),
        (Workload.EVENT, "endpoint"),
    ],
)
@pytest.mark.parametrize(("count", "plan_count"), [(1, 1), (3, 4), (5, 8), (33, 64)])
def test_training_plan_search_parameters(
    clients: AwsClients,
    make_market: MarketFactory,
    workload: Workload,
    target: str,
    count: int,
    plan_count: int,
) -> None:
    request = make_request(workload=workload, count=count, duration_hours=30)
    with Stubber(clients.sagemaker) as stub:
        stub.add_response(
            "search_training_plan_offerings",
            {"TrainingPlanOfferings": []},
            {
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": plan_count,
                "StartTimeAfter": datetime(2026, 12, 9, 4, 0, tzinfo=UTC),
                "EndTimeBefore": datetime(2026, 12, 14, 4, 0, tzinfo=UTC),
                "DurationHours": 48,
                "TargetResources": [target],
            },
        )
        assert make_market().calls(request, NOW)["training-plan"]() == []
        stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    "changes",
    [
        {"environment": Environment.EC2},
        {"count": 65},
        {"duration_hours": 183 * 24},
    ],
    ids=["ec2", "over-64-instances", "over-182-days"],
)
def test_no_training_plan_call_when_a_plan_cannot_fit(
    clients: AwsClients, make_market: MarketFactory, changes: dict[str, Any]
) -> None:
    with Stubber(clients.sagemaker):
        assert make_market().calls(make_request(**changes), NOW)["training-plan"]() == []


def test_training_plan_offerings_one_after_another_and_side_by_side(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    t0 = datetime(2026, 12, 9, 11, 30, tzinfo=UTC)
    t1 = t0 + timedelta(hours=48)
    sequential = plan_offering(
        "tpo-SHA256-seq",
        "27336.00",
        96,
        [plan_part("us-east-1a", 4, t0, 48), plan_part("us-east-1b", 4, t1, 48)],
    )
    parallel = plan_offering(
        "tpo-SHA256-par",
        "28100.50",
        96,
        [plan_part("us-east-1a", 2, t0, 96), plan_part("us-east-1c", 2, t0, 96)],
    )
    with Stubber(clients.sagemaker) as stub:
        stub.add_response(
            "search_training_plan_offerings", {"TrainingPlanOfferings": [sequential, parallel]}
        )
        offerings = make_market().calls(make_request(duration_hours=96), NOW)["training-plan"]()
        stub.assert_no_pending_responses()

    seq, par = offerings  # AWS's order kept: the first is its best match
    assert seq.offering_id == "tpo-SHA256-seq"
    assert seq.kind is ReservationKind.TRAINING_PLAN
    assert seq.count == 4  # one part after the other: 4 instances at any time, not 8
    assert (seq.start, seq.end) == (t0, t0 + timedelta(hours=96))
    assert seq.duration_hours == 96
    assert seq.upfront_usd == 27336.0
    assert seq.hourly_usd == pytest.approx(27336.0 / (4 * 96))
    assert [(p.instance_type, p.zone, p.count, p.start) for p in seq.parts] == [
        (TYPE, "us-east-1a", 4, t0),
        (TYPE, "us-east-1b", 4, t1),
    ]
    assert seq.instance_type == TYPE  # without "ml."
    assert seq.source.origin is Origin.LIVE
    assert seq.source.detail == "SearchTrainingPlanOfferings"

    assert par.count == 4  # side by side: 2 + 2
    assert (par.start, par.end) == (t0, t0 + timedelta(hours=96))
    assert [p.zone for p in par.parts] == ["us-east-1a", "us-east-1c"]


# --- 5. Throttling, on the HTTP layer -------------------------------------------------


def capacity_blocks_xml(*offerings: dict[str, Any]) -> Reply:
    def stamp(when: datetime) -> str:
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    items = "".join(
        "<item>"
        f"<capacityBlockOfferingId>{o['CapacityBlockOfferingId']}</capacityBlockOfferingId>"
        f"<instanceType>{o['InstanceType']}</instanceType>"
        f"<availabilityZone>{o['AvailabilityZone']}</availabilityZone>"
        f"<instanceCount>{o['InstanceCount']}</instanceCount>"
        f"<startDate>{stamp(o['StartDate'])}</startDate>"
        f"<endDate>{stamp(o['EndDate'])}</endDate>"
        f"<capacityBlockDurationHours>{o['CapacityBlockDurationHours']}</capacityBlockDurationHours>"
        f"<capacityBlockDurationMinutes>{o['CapacityBlockDurationMinutes']}"
        "</capacityBlockDurationMinutes>"
        f"<upfrontFee>{o['UpfrontFee']}</upfrontFee>"
        f"<currencyCode>{o['CurrencyCode']}</currencyCode>"
        f"<tenancy>{o['Tenancy']}</tenancy>"
        "</item>"
        for o in offerings
    )
    return Reply(
        200,
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<DescribeCapacityBlockOfferingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        "<requestId>0b7a0a5e-0000-4000-8000-000000000001</requestId>"
        f"<capacityBlockOfferingSet>{items}</capacityBlockOfferingSet>"
        "</DescribeCapacityBlockOfferingsResponse>",
        {"Content-Type": "text/xml;charset=UTF-8"},
    )


LIMIT = ec2_error("CapacityBlockDescribeLimitExceeded", "Request limit exceeded.")


def test_the_capacity_block_account_limit_is_said_once_not_retried(
    clients: AwsClients, make_market: MarketFactory, backoff: list[float]
) -> None:
    # EC2 documents CapacityBlockDescribeLimitExceeded as an account limit (it is also
    # the answer when the account's Capacity Block quota is 0): retrying it five times
    # only spent the user's 15 seconds.
    offering = block_offering("cb-0a1b2c3d4e5f60718", "us-east-1a", BLOCK_START, 48, 0, "13291.39")
    http = HttpReplies([LIMIT, capacity_blocks_xml(offering)]).install(
        clients.ec2, "DescribeCapacityBlockOfferings"
    )
    responder = full_market(Responder()).clear("DescribeCapacityBlockOfferings")
    responder.install(clients.ec2, clients.sagemaker, clients.pricing)

    snapshot = make_market().snapshot(make_request(), NOW)

    assert len(http.requests) == 1
    assert backoff == []
    assert snapshot.capacity_blocks == ()
    reason = snapshot.errors["capacity-block"]
    assert "account has reached its Capacity Block limit" in reason
    assert "quota" in reason and "AWS said" not in reason
    body = parse_qs(str(http.requests[0].body))
    assert body["Action"] == ["DescribeCapacityBlockOfferings"]
    assert body["CapacityDurationHours"] == ["48"]
    # Without AllAvailabilityZones, AWS leaves out Local Zones the account has not opted into.
    assert "AllAvailabilityZones" not in body


def test_ec2_throttling_is_retried_with_backoff(
    clients: AwsClients, make_market: MarketFactory, backoff: list[float]
) -> None:
    offering = block_offering("cb-0a1b2c3d4e5f60718", "us-east-1a", BLOCK_START, 48, 0, "13291.39")
    throttled = ec2_error("RequestLimitExceeded", "Request limit exceeded.", 503)
    http = HttpReplies([throttled, throttled, capacity_blocks_xml(offering)]).install(
        clients.ec2, "DescribeCapacityBlockOfferings"
    )
    offerings = make_market().calls(make_request(), NOW)["capacity-block"]()

    assert [o.offering_id for o in offerings] == ["cb-0a1b2c3d4e5f60718"]
    assert offerings[0].upfront_usd == 13291.39
    assert offerings[0].start == BLOCK_START
    assert len(http.requests) == 3
    assert backoff == [1.0, 2.0]  # as throttling (1 s scale, doubling)


def test_other_ec2_errors_are_not_retried(
    clients: AwsClients, make_market: MarketFactory, backoff: list[float]
) -> None:
    http = HttpReplies([ec2_error("InvalidParameterValue", "Unsupported instance type")]).install(
        clients.ec2, "DescribeCapacityBlockOfferings"
    )
    with pytest.raises(ClientError, match="Unsupported instance type"):
        make_market().calls(make_request(), NOW)["capacity-block"]()
    assert len(http.requests) == 1
    assert backoff == []


def test_training_plan_throttling_is_retried(
    clients: AwsClients, make_market: MarketFactory, backoff: list[float]
) -> None:
    start = BLOCK_START.timestamp()
    ok = Reply(
        200,
        json.dumps(
            {
                "TrainingPlanOfferings": [
                    {
                        "TrainingPlanOfferingId": "tpo-SHA256-abc",
                        "TargetResources": ["training-job"],
                        "DurationHours": 48,
                        "DurationMinutes": 0,
                        "UpfrontFee": "9920.00",
                        "CurrencyCode": "USD",
                        "ReservedCapacityOfferings": [
                            {
                                "InstanceType": "ml.p5.48xlarge",
                                "InstanceCount": 4,
                                "AvailabilityZone": "us-east-1a",
                                "DurationHours": 48,
                                "DurationMinutes": 0,
                                "StartTime": start,
                                "EndTime": start + 48 * 3600,
                            }
                        ],
                    }
                ]
            }
        ),
        {"Content-Type": "application/x-amz-json-1.1"},
    )
    throttled = json_error("ThrottlingException", "Rate exceeded")
    http = HttpReplies([throttled, throttled, ok]).install(
        clients.sagemaker, "SearchTrainingPlanOfferings"
    )
    (offering,) = make_market().calls(make_request(), NOW)["training-plan"]()

    assert offering.offering_id == "tpo-SHA256-abc"
    assert offering.start == BLOCK_START
    assert len(http.requests) == 3
    assert backoff == [1.0, 2.0]


def test_live_clients_from_the_factory_use_the_retry_policy(
    monkeypatch: pytest.MonkeyPatch, backoff: list[float]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTTESTTESTTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    settings = Settings.model_validate({"GPU_BOT_AWS": "live", "AWS_REGION": "eu-west-1"})
    factory = clients_factory(settings, ManualClock(NOW))
    clients = factory("eu-west-1")

    assert factory("eu-west-1") is clients
    assert clients.origin is Origin.LIVE
    assert clients.ec2.meta.region_name == "eu-west-1"
    assert clients.sagemaker.meta.region_name == "eu-west-1"
    assert clients.pricing.meta.region_name == "us-east-1"
    for client in (clients.ec2, clients.sagemaker, clients.pricing):
        assert client.meta.config.retries == RETRIES.retries  # type: ignore[attr-defined]
    offering = block_offering("cb-0a1b2c3d4e5f60718", "eu-west-1a", BLOCK_START, 48, 0, "1.00")
    throttled = ec2_error("RequestLimitExceeded", "Request limit exceeded.", 503)
    http = HttpReplies([throttled, capacity_blocks_xml(offering)]).install(
        clients.ec2, "DescribeCapacityBlockOfferings"
    )
    clients.ec2.describe_capacity_block_offerings(CapacityDurationHours=48)
    assert len(http.requests) == 2


# --- 6. Errors, fallbacks, cache ------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "source"),
    [
        ("DescribeCapacityBlockOfferings", "capacity-block"),
        ("SearchTrainingPlanOfferings", "training-plan"),
    ],
)
def test_an_aws_error_is_reported_for_its_source_only(
    clients: AwsClients, make_market: MarketFactory, operation: str, source: str
) -> None:
    responder = full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    responder.clear(operation).error(
        operation, "UnauthorizedOperation", "You are not authorized to perform this operation."
    )

    snapshot = make_market().snapshot(make_request(), NOW)

    assert snapshot.errors == {
        source: "AWS said: UnauthorizedOperation: You are not authorized to perform this operation."
    }
    assert snapshot.on_demand is not None and snapshot.on_demand.source.origin is Origin.LIVE
    assert snapshot.sagemaker_on_demand is not None
    assert snapshot.sagemaker_on_demand.usd_per_hour == 76.705
    assert snapshot.spot is not None and snapshot.spot.usd_per_hour == 21.477
    other = "training_plans" if source == "capacity-block" else "capacity_blocks"
    assert len(getattr(snapshot, other)) == 1
    assert getattr(snapshot, source.replace("-", "_") + "s") == ()


def test_a_pricing_failure_falls_back_to_the_catalog_and_is_not_cached(
    clients: AwsClients, make_market: MarketFactory, redis_store: RedisStore, clock: ManualClock
) -> None:
    responder = full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    responder.clear("GetProducts").error("GetProducts", "AccessDeniedException", "No access")
    market = make_market(cache=redis_store)

    snapshot = market.snapshot(make_request(), clock.now())
    assert snapshot.on_demand is not None
    assert snapshot.on_demand.usd_per_hour == CATALOG_ON_DEMAND
    assert snapshot.on_demand.source.origin is Origin.CATALOG
    assert snapshot.sagemaker_on_demand is not None
    assert snapshot.sagemaker_on_demand.source.origin is Origin.CATALOG
    assert snapshot.spot is not None and snapshot.spot.source.origin is Origin.LIVE
    assert len(snapshot.capacity_blocks) == 1 and len(snapshot.training_plans) == 1

    # Pricing recovers: the next quote asks again (a catalog figure is never cached).
    responder.clear("GetProducts").add("GetProducts", get_products)
    clock.advance(timedelta(minutes=1))
    again = market.snapshot(make_request(), clock.now())
    assert again.on_demand is not None
    assert again.on_demand.source.origin is Origin.LIVE
    assert again.on_demand.usd_per_hour == 98.32


def test_the_second_quote_reads_prices_from_the_cache(
    clients: AwsClients, make_market: MarketFactory, redis_store: RedisStore, clock: ManualClock
) -> None:
    responder = full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    market = make_market(cache=redis_store)

    first = market.snapshot(make_request(), clock.now())
    assert first.on_demand is not None and first.on_demand.source.origin is Origin.LIVE
    assert responder.count("GetProducts") == 2
    assert responder.count("DescribeSpotPriceHistory") == 1

    clock.advance(timedelta(minutes=7))
    second = market.snapshot(make_request(), clock.now())

    assert responder.count("GetProducts") == 2  # no Pricing call
    assert responder.count("DescribeSpotPriceHistory") == 1  # no Spot call
    assert responder.count("DescribeCapacityBlockOfferings") == 2  # always fresh
    assert responder.count("SearchTrainingPlanOfferings") == 2
    for before, after in [
        (first.on_demand, second.on_demand),
        (first.sagemaker_on_demand, second.sagemaker_on_demand),
        (first.spot, second.spot),
    ]:
        assert before is not None and after is not None
        assert after.usd_per_hour == before.usd_per_hour
        assert after.zone == before.zone
        assert after.source.origin is Origin.CACHE
        assert after.source.age_seconds == 420
        assert after.source.detail == before.source.detail
        assert "(cached 7m ago)" in after.source.describe()
    assert second.spot is not None and second.spot.zone == "us-east-1b"

    # The 15-minute TTL runs on the given clock (the shell's sandbox time), not only on
    # Redis's: 88 hours later the prices are asked again, never "cached 88h ago".
    clock.advance(timedelta(hours=88))
    third = market.snapshot(make_request(), clock.now())
    assert responder.count("GetProducts") == 4 and responder.count("DescribeSpotPriceHistory") == 2
    assert third.on_demand is not None and third.on_demand.source.origin is Origin.LIVE


def test_the_sagemaker_price_is_cached_per_workload(
    clients: AwsClients, make_market: MarketFactory, redis_store: RedisStore, clock: ManualClock
) -> None:
    responder = full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    market = make_market(cache=redis_store)

    training = market.snapshot(make_request(workload=Workload.TRAINING), clock.now())
    inference = market.snapshot(make_request(workload=Workload.INFERENCE), clock.now())

    assert training.sagemaker_on_demand is not None
    assert training.sagemaker_on_demand.usd_per_hour == 76.705
    assert inference.sagemaker_on_demand is not None
    assert inference.sagemaker_on_demand.usd_per_hour == 79.3  # hosting, not training
    assert inference.sagemaker_on_demand.source.origin is Origin.LIVE
    assert inference.on_demand is not None
    assert inference.on_demand.source.origin is Origin.CACHE  # EC2 is the same for both
    services = [p["ServiceCode"] for p in responder.params("GetProducts")]
    assert sorted(services) == ["AmazonEC2", "AmazonSageMaker", "AmazonSageMaker"]


def test_snapshot_under_moto_spot_live_pricing_from_the_catalog(
    make_market: MarketFactory,
) -> None:
    # moto answers Spot and refuses the Pricing API (404, not implemented); the reserved
    # offerings, which moto lacks entirely, are answered ahead of it.
    with mock_aws():
        clients = live_clients()
        full_market(Responder()).clear("GetProducts").clear("DescribeSpotPriceHistory").install(
            clients.ec2, clients.sagemaker, clients.pricing
        )
        snapshot = make_market(on=clients).snapshot(make_request(), NOW)

    assert snapshot.errors == {}
    assert snapshot.spot is not None
    assert snapshot.spot.source.origin is Origin.LIVE
    assert snapshot.spot.usd_per_hour == pytest.approx(0.00001)
    assert snapshot.on_demand is not None
    assert snapshot.on_demand.source.origin is Origin.CATALOG
    assert snapshot.on_demand.usd_per_hour == CATALOG_ON_DEMAND
    assert snapshot.sagemaker_on_demand is not None
    assert snapshot.sagemaker_on_demand.source.origin is Origin.CATALOG
    assert len(snapshot.capacity_blocks) == 1 and len(snapshot.training_plans) == 1


# --- 7. Concurrency -------------------------------------------------------------------


def test_the_five_lookups_of_a_snapshot_run_at_the_same_time(
    clients: AwsClients, make_market: MarketFactory
) -> None:
    # Each answered call waits until all five are in flight; one at a time would break
    # the barrier (BrokenBarrierError after the timeout) and fail the snapshot.
    responder = full_market(Responder(barrier=threading.Barrier(5, timeout=10))).install(
        clients.ec2, clients.sagemaker, clients.pricing
    )
    snapshot = make_market().snapshot(make_request(), NOW)

    assert len(responder.calls) == 5
    assert len(responder.threads) == 5
    assert snapshot.errors == {}
    assert snapshot.on_demand is not None and snapshot.on_demand.usd_per_hour == 98.32
    assert snapshot.sagemaker_on_demand is not None
    assert snapshot.spot is not None
    assert len(snapshot.capacity_blocks) == 1
    assert len(snapshot.training_plans) == 1


def test_an_unreadable_answer_costs_one_option_not_the_quote() -> None:
    from datetime import UTC, datetime

    from bot.adapters.aws.market import AwsClients, AwsMarket
    from bot.domain.catalog import default_catalog
    from bot.domain.market import Origin
    from tests.factories import make_request

    class Broken:
        def __getattr__(self, name: str) -> object:
            def fail(*_a: object, **_k: object) -> object:
                raise NotImplementedError(name)  # what moto raises for Capacity Blocks

            return fail

    clients = AwsClients.of(
        ec2=Broken(),
        sagemaker=Broken(),
        pricing=Broken(),
        ec2_once=Broken(),
        sagemaker_once=Broken(),
        origin=Origin.LIVE,
    )
    market = AwsMarket(lambda _r: clients, default_catalog())
    snap = market.snapshot(make_request(), datetime(2026, 11, 30, tzinfo=UTC))
    market.close()
    assert "NotImplementedError" in snap.errors["capacity-block"]
    assert "NotImplementedError" in snap.errors["training-plan"]
    assert snap.on_demand is not None
    assert snap.on_demand.source.origin is Origin.CATALOG
