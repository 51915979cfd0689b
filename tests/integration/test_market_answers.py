"""The live market adapter against answers shaped like AWS's real ones: price list rows that
are not the hourly rate, $0 prices, missing optional fields, other currencies, local times.

Every answer goes through real boto3 clients (Stubber, the `before-call` responder, or raw
HTTP so that botocore's own parser runs).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from aws_sandbox import SandboxMarket
from bot.adapters.aws.market import AwsClients, AwsMarket, PriceUnavailable
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.domain.catalog import default_catalog
from bot.domain.comparison import OptionKind
from bot.domain.market import MarketSnapshot, Origin
from bot.domain.recommendation import build_quote
from bot.domain.request import Environment, Workload
from tests.aws_live import HttpReplies, Reply, Responder, live_clients
from tests.conftest import NOW
from tests.integration.test_market_live import (
    BLOCK_START,
    EC2_FILTERS,
    REGION,
    block_offering,
    ec2_product,
    full_market,
    make_request,
    plan_offering,
    plan_part,
    sagemaker_product,
)


@pytest.fixture
def clients() -> AwsClients:
    return live_clients()


@pytest.fixture
def market(clients: AwsClients) -> Iterator[AwsMarket]:
    made = AwsMarket(lambda _region: clients, default_catalog())
    yield made
    made.close()


def _with_unit(product: str, unit: str) -> str:
    data = json.loads(product)
    for term in data["terms"]["OnDemand"].values():
        for dimension in term["priceDimensions"].values():
            dimension["unit"] = unit
    return json.dumps(data)


def _ec2_row(sku: str, usd: str, market_option: str = "OnDemand", unit: str = "Hrs") -> str:
    data = json.loads(ec2_product(sku, [usd]))
    data["product"]["attributes"]["marketoption"] = market_option
    return _with_unit(json.dumps(data), unit)


def _price_list(*rows: str) -> dict[str, Any]:
    return {"FormatVersion": "aws_v1", "PriceList": list(rows)}


# --- Wrong money figures --------------------------------------------------------------


def test_sagemaker_on_demand_is_the_hourly_row_of_the_component(
    clients: AwsClients, market: AwsMarket
) -> None:
    # The price list also has non-hourly rows for the same instance, such as a training
    # plan's upfront fee (unit Quantity) whose usage type also says "Train".
    upfront = _with_unit(
        sagemaker_product("UPFRONT0000000001", "TrainingPlan-Upfront", "Training Plan", "13.57"),
        "Quantity",
    )
    quantity_train = _with_unit(
        sagemaker_product("QTY00000000000001", "Train", "Training", "13.57"), "Quantity"
    )
    hourly = sagemaker_product("QEJ6E7DUMR4NKQ6N", "Train", "Training", "76.7050000000")
    with Stubber(clients.pricing) as stub:
        stub.add_response("get_products", _price_list(upfront, quantity_train, hourly))
        price = market.calls(make_request(), NOW)["sagemaker-on-demand"]()
    assert price is not None and price.usd_per_hour == 76.705


def test_sagemaker_without_an_hourly_row_has_no_price(
    clients: AwsClients, market: AwsMarket
) -> None:
    upfront = _with_unit(sagemaker_product("QTY0001", "Train", "Training", "13.57"), "Quantity")
    responder = full_market(Responder()).clear("GetProducts")
    responder.add(
        "GetProducts",
        lambda p: (
            _price_list(upfront)
            if p["ServiceCode"] == "AmazonSageMaker"
            else _price_list(ec2_product("JZQ8KF8TMVS3VNGF", ["98.32"]))
        ),
    ).install(clients.ec2, clients.sagemaker, clients.pricing)

    request = make_request(environment=Environment.SAGEMAKER)
    snapshot = market.snapshot(request, NOW)

    assert snapshot.sagemaker_on_demand is None
    assert (
        "no published SageMaker Training On-Demand price" in snapshot.errors["sagemaker-on-demand"]
    )


def test_ec2_price_asks_for_on_demand_rows_and_checks_the_unit(
    clients: AwsClients, market: AwsMarket
) -> None:
    rows = _price_list(
        _ec2_row("CB000000000000001", "0.0000000000", market_option="CapacityBlock"),
        _ec2_row("QTY00000000000001", "1234.0000000000", unit="Quantity"),
        _ec2_row("JZQ8KF8TMVS3VNGF", "98.3200000000"),
    )
    params = {"ServiceCode": "AmazonEC2", "Filters": EC2_FILTERS, "FormatVersion": "aws_v1"}
    assert {"Type": "TERM_MATCH", "Field": "marketoption", "Value": "OnDemand"} in EC2_FILTERS
    with Stubber(clients.pricing) as stub:
        stub.add_response("get_products", rows, params)
        price = market.calls(make_request(), NOW)["on-demand"]()
        stub.assert_no_pending_responses()
    assert price is not None and price.usd_per_hour == 98.32


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ([_ec2_row("ZERO0000000000001", "0.0000000000")], "the AWS price list shows $0"),
        ([], "no published EC2 On-Demand price for p5.48xlarge in us-east-1"),
    ],
    ids=["zero", "no-product"],
)
def test_no_published_on_demand_price_is_said_and_nothing_is_totalled(
    clients: AwsClients, market: AwsMarket, rows: list[str], said: str
) -> None:
    responder = full_market(Responder()).clear("GetProducts")
    responder.add(
        "GetProducts",
        lambda p: _price_list(*rows) if p["ServiceCode"] == "AmazonEC2" else _price_list(),
    ).install(clients.ec2, clients.sagemaker, clients.pricing)
    request = make_request(environment=Environment.EC2)

    snapshot = market.snapshot(request, NOW)
    quote = build_quote(request, snapshot, default_catalog(), NOW)

    assert snapshot.on_demand is None  # not the catalog's figure, not another region's
    on_demand = quote.option(OptionKind.ON_DEMAND)
    assert not on_demand.eligible and on_demand.total_usd is None
    assert said in on_demand.reasons[0]
    odcr = quote.option(OptionKind.ON_DEMAND_RESERVATION)
    assert not odcr.eligible and odcr.total_usd is None
    block = quote.option(OptionKind.CAPACITY_BLOCK)
    assert block.eligible and block.break_even_utilization is None


def test_a_failed_lookup_never_borrows_another_regions_figure(clients: AwsClients) -> None:
    # The catalog has p5.48xlarge On-Demand for us-east-1 only.
    eu = live_clients("eu-west-1")
    market = AwsMarket(lambda _region: eu, default_catalog())
    try:
        with Stubber(eu.pricing) as stub:
            stub.add_client_error("get_products", "AccessDeniedException", "no pricing access")
            request = make_request(region="eu-west-1")
            with pytest.raises(PriceUnavailable) as raised:
                market.calls(request, NOW)["on-demand"]()
    finally:
        market.close()
    message = str(raised.value)
    assert "lookup failed" in message and "no figure for p5.48xlarge in eu-west-1" in message


def test_fees_in_another_currency_are_left_out_and_said(
    clients: AwsClients, market: AwsMarket
) -> None:
    euro = block_offering("cb-0eur", "us-east-1a", BLOCK_START, 48, 0, "9000.00") | {
        "CurrencyCode": "EUR"
    }
    usd = block_offering("cb-0usd", "us-east-1b", BLOCK_START, 48, 0, "13291.39")
    responder = full_market(Responder()).clear("DescribeCapacityBlockOfferings")
    responder.add("DescribeCapacityBlockOfferings", {"CapacityBlockOfferings": [euro, usd]})
    responder.install(clients.ec2, clients.sagemaker, clients.pricing)

    request = make_request(environment=Environment.EC2)
    snapshot = market.snapshot(request, NOW)
    option = build_quote(request, snapshot, default_catalog(), NOW).option(
        OptionKind.CAPACITY_BLOCK
    )

    assert [o.offering_id for o in snapshot.capacity_blocks] == ["cb-0usd"]
    assert option.total_usd == 13291.39
    assert any("cb-0eur" in r and "priced in EUR" in r for r in option.reasons)


# --- Missing optional fields ----------------------------------------------------------


def _without(offering: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {k: v for k, v in offering.items() if k not in fields}


def test_a_plan_without_duration_hours_is_skipped_and_said(
    clients: AwsClients, market: AwsMarket
) -> None:
    part = plan_part("us-east-1a", 4, BLOCK_START, 48)
    broken = _without(plan_offering("tpo-broken", "9000.00", 48, [part]), "DurationHours")
    no_fee = plan_offering("tpo-nofee", "", 48, [part])
    bare = {"TrainingPlanOfferingId": "tpo-bare", "TargetResources": ["training-job"]}
    good = plan_offering("tpo-good", "9920.00", 48, [part])
    responder = full_market(Responder()).clear("SearchTrainingPlanOfferings")
    responder.add(
        "SearchTrainingPlanOfferings", {"TrainingPlanOfferings": [broken, no_fee, bare, good]}
    ).install(clients.ec2, clients.sagemaker, clients.pricing)

    request = make_request(environment=Environment.SAGEMAKER)
    snapshot = market.snapshot(request, NOW)
    option = build_quote(request, snapshot, default_catalog(), NOW).option(OptionKind.TRAINING_PLAN)

    assert snapshot.errors == {}
    assert [o.offering_id for o in snapshot.training_plans] == ["tpo-good"]
    assert option.eligible and option.total_usd == 9920.0
    notes = snapshot.notes["training-plan"]
    assert any("tpo-broken" in n and "DurationHours" in n for n in notes)
    assert any("tpo-nofee" in n and "UpfrontFee" in n for n in notes)
    assert any("tpo-bare" in n for n in notes)
    assert all(n in option.reasons for n in notes)


def test_a_block_with_only_the_required_fields(clients: AwsClients, market: AwsMarket) -> None:
    # Every CapacityBlockOffering member is optional in the model.
    full = block_offering("cb-0full", "us-east-1a", BLOCK_START, 48, 0, "13291.39")
    lean = _without(
        block_offering("cb-0lean", "us-east-1b", BLOCK_START, 48, 0, "13000.00"),
        "AvailabilityZone",
        "CurrencyCode",
        "Tenancy",
        "CapacityBlockDurationMinutes",
    )
    no_fee = _without(full, "UpfrontFee") | {"CapacityBlockOfferingId": "cb-0nofee"}
    with Stubber(clients.ec2) as stub:
        stub.add_response(
            "describe_capacity_block_offerings",
            {"CapacityBlockOfferings": [no_fee, lean, full]},
        )
        found = market.calls(make_request(), NOW)["capacity-block"]()
    assert [o.offering_id for o in found] == ["cb-0lean", "cb-0full"]
    assert found[0].zone is None and found[0].duration_hours == 48
    assert found.skipped == ("left out Capacity Block offering cb-0nofee: AWS sent no UpfrontFee",)


# --- Times ----------------------------------------------------------------------------


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_sagemaker_times_are_utc_on_a_host_in_another_zone(
    clients: AwsClients, market: AwsMarket, new_york: None
) -> None:
    # SageMaker sends epoch seconds; botocore gives them back in the host's zone.
    start = BLOCK_START.timestamp()
    body = {
        "TrainingPlanOfferings": [
            {
                "TrainingPlanOfferingId": "tpo-SHA256-abc",
                "TargetResources": ["training-job"],
                "DurationHours": 48,
                "UpfrontFee": "9920.00",
                "CurrencyCode": "USD",
                "ReservedCapacityOfferings": [
                    {
                        "InstanceType": "ml.p5.48xlarge",
                        "InstanceCount": 4,
                        "AvailabilityZone": "us-east-1a",
                        "StartTime": start,
                        "EndTime": start + 48 * 3600,
                    }
                ],
            }
        ]
    }
    HttpReplies(
        [Reply(200, json.dumps(body), {"Content-Type": "application/x-amz-json-1.1"})]
    ).install(clients.sagemaker, "SearchTrainingPlanOfferings")

    (offering,) = market.calls(make_request(), NOW)["training-plan"]()

    assert f"{offering.start:%Y-%m-%d %H:%M}" == "2026-12-09 11:30"
    assert offering.start.utcoffset() == timedelta(0)
    assert offering.parts[0].end == BLOCK_START + timedelta(hours=48)
    assert f"{offering.parts[0].start:%H:%M}" == "11:30"


def test_the_plan_reason_names_the_target_searched(clients: AwsClients, market: AwsMarket) -> None:
    full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    for workload, said in (
        (Workload.TRAINING, "SageMaker training jobs (searched with target training-job)"),
        (Workload.INFERENCE, "SageMaker inference endpoints (searched with target endpoint)"),
    ):
        request = make_request(workload=workload, environment=Environment.SAGEMAKER)
        quote = build_quote(request, market.snapshot(request, NOW), default_catalog(), NOW)
        reasons = quote.option(OptionKind.TRAINING_PLAN).reasons
        assert said in reasons[0]
        assert "HyperPod or an inference endpoint" not in " ".join(reasons)


def test_billed_days_and_total_come_from_the_same_block(
    clients: AwsClients, market: AwsMarket
) -> None:
    # A same-day start: the block is 40 h 30 min, not the 2 days the request rounds to.
    start = datetime(2026, 11, 30, 19, 0, tzinfo=UTC)
    block = block_offering("cb-0short", "us-east-1a", start, 40, 30, "11000.00")
    with Stubber(clients.ec2) as stub:
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [block]})
        found = market.calls(make_request(start=start, duration_hours=40), NOW)["capacity-block"]()
    request = make_request(start=start, duration_hours=40, environment=Environment.EC2)
    quote = build_quote(
        request, MarketSnapshot(capacity_blocks=tuple(found)), default_catalog(), NOW
    )
    option = quote.option(OptionKind.CAPACITY_BLOCK)
    assert option.billed_hours == 40.5
    assert "40 hours is billed as 40 h 30 min" in option.reasons[0]
    assert option.total_usd == 11000.0


# --- Failures and messages ------------------------------------------------------------


def test_one_slow_lookup_costs_its_option_not_the_quote(clients: AwsClients) -> None:
    release = threading.Event()

    def slow(_params: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return {"TrainingPlanOfferings": []}

    responder = full_market(Responder()).clear("SearchTrainingPlanOfferings")
    responder.add("SearchTrainingPlanOfferings", slow)
    responder.install(clients.ec2, clients.sagemaker, clients.pricing)
    market = AwsMarket(lambda _r: clients, default_catalog(), timeout=timedelta(seconds=0.5))
    try:
        started = time.monotonic()
        snapshot = market.snapshot(make_request(), NOW)
        took = time.monotonic() - started
    finally:
        release.set()
        market.close()
    assert took < 5
    assert "no answer from AWS within" in snapshot.errors["training-plan"]
    assert snapshot.on_demand is not None and len(snapshot.capacity_blocks) == 1


@pytest.mark.parametrize("instance_type", ["g5.48xlarge", "g6e.12xlarge", "g7.48xlarge"])
def test_types_without_plans_or_blocks_are_not_asked_about(
    clients: AwsClients, market: AwsMarket, instance_type: str
) -> None:
    responder = full_market(Responder())
    for operation in ("SearchTrainingPlanOfferings", "DescribeCapacityBlockOfferings"):
        responder.clear(operation).error(
            operation, "ValidationException", "1 validation error detected: Value at 'instanceType'"
        )
    responder.install(clients.ec2, clients.sagemaker, clients.pricing)
    request = make_request(instance_type=instance_type, count=1)

    quote = build_quote(request, market.snapshot(request, NOW), default_catalog(), NOW)

    assert responder.count("SearchTrainingPlanOfferings") == 0
    assert responder.count("DescribeCapacityBlockOfferings") == 0
    plan = quote.option(OptionKind.TRAINING_PLAN)
    assert plan.reasons == [f"Training plans are not offered for {instance_type}"]
    text = json.dumps(quote.model_dump(mode="json"))
    assert "validation error" not in text and "ValidationException" not in text


def test_a_refused_search_is_said_without_aws_text(clients: AwsClients, market: AwsMarket) -> None:
    responder = full_market(Responder()).clear("SearchTrainingPlanOfferings")
    responder.error(
        "SearchTrainingPlanOfferings",
        "ValidationException",
        "1 validation error detected: Value 'ml.p5.48xlarge' at 'instanceType' failed",
    ).install(clients.ec2, clients.sagemaker, clients.pricing)
    snapshot = market.snapshot(make_request(), NOW)
    reason = snapshot.errors["training-plan"]
    assert reason.startswith("AWS refused the training plan search for this request")
    assert "validation error detected" not in reason


def test_a_block_in_a_local_zone_says_so(clients: AwsClients, market: AwsMarket) -> None:
    local = block_offering("cb-0local", "us-east-1-bos-1a", BLOCK_START, 48, 0, "12000.00")
    responder = full_market(Responder()).clear("DescribeCapacityBlockOfferings")
    responder.add(
        "DescribeCapacityBlockOfferings",
        {"CapacityBlockOfferings": [local | {"ZoneType": "local-zone"}]},
    ).install(clients.ec2, clients.sagemaker, clients.pricing)
    request = make_request(environment=Environment.EC2)
    quote = build_quote(request, market.snapshot(request, NOW), default_catalog(), NOW)
    reasons = quote.option(OptionKind.CAPACITY_BLOCK).reasons
    assert "in us-east-1-bos-1a, a local-zone (not a regular Availability Zone)" in reasons
    assert "AllAvailabilityZones" not in responder.params("DescribeCapacityBlockOfferings")[0]


def test_sandbox_and_live_prices_never_share_a_cache_entry(
    clients: AwsClients, redis_store: RedisStore, clock: ManualClock
) -> None:
    sandbox = sandbox_clients(SandboxMarket(clock), REGION)
    sandboxed = AwsMarket(lambda _r: sandbox, default_catalog(), cache=redis_store)
    live = AwsMarket(lambda _r: clients, default_catalog(), cache=redis_store)
    full_market(Responder()).install(clients.ec2, clients.sagemaker, clients.pricing)
    try:
        first = sandboxed.snapshot(make_request(), clock.now())
        second = live.snapshot(make_request(), clock.now())
    finally:
        sandboxed.close()
        live.close()
    assert first.on_demand is not None and first.on_demand.source.origin is Origin.SANDBOX
    assert second.on_demand is not None and second.on_demand.source.origin is Origin.LIVE
    assert second.on_demand.usd_per_hour == 98.32
