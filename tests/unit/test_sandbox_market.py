"""The market's seams: the before-call installer, validation both ways, scarcity and
faults, storage, offering ids."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError, ParamValidationError

from aws_sandbox import (
    DEFAULT_ZONES,
    InMemoryMarketStore,
    SandboxMarket,
    SandboxResponseError,
    install_sandbox,
    validate_response,
)
from aws_sandbox.offering_ids import BadOfferingId
from aws_sandbox.offers import BlockOffer, PlanOffer, PlanPart
from aws_sandbox.zones import zone_id
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import default_catalog

NOW = datetime(2026, 3, 2, 11, 30, tzinfo=UTC)
DAY = timedelta(days=1)
SEARCH = {"InstanceType": "p5.48xlarge", "InstanceCount": 8, "CapacityDurationHours": 48}
PLAN_SEARCH = {
    "InstanceType": "ml.p5.48xlarge",
    "InstanceCount": 8,
    "DurationHours": 48,
    "TargetResources": ["training-job"],
}


@pytest.fixture
def market() -> SandboxMarket:
    return SandboxMarket(ManualClock(NOW))


@pytest.fixture
def clients(market: SandboxMarket) -> Any:
    return sandbox_clients(market, "us-east-1")


def code_of(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


@cache
def model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


# --- the installer --------------------------------------------------------------------


def test_botocore_itself_rejects_bad_parameters_before_the_market_sees_them(
    clients: Any,
) -> None:
    ec2, sm = clients.ec2, clients.sagemaker
    with pytest.raises(ParamValidationError, match="CapacityDurationHours"):
        ec2.describe_capacity_block_offerings(InstanceType="p5.48xlarge", InstanceCount=1)
    with pytest.raises(ParamValidationError, match="MaxResults"):
        ec2.describe_capacity_block_offerings(**SEARCH, MaxResults=0)
    with pytest.raises(ParamValidationError, match="InstanceCount"):
        ec2.describe_capacity_block_offerings(**SEARCH | {"InstanceCount": "two"})
    with pytest.raises(ParamValidationError, match="Colour"):
        ec2.describe_capacity_block_offerings(**SEARCH, Colour="blue")
    with pytest.raises(ParamValidationError, match="DurationHours"):
        sm.search_training_plan_offerings(**PLAN_SEARCH | {"DurationHours": 0})
    with pytest.raises(ParamValidationError, match="TrainingPlanOfferingId"):
        sm.create_training_plan(TrainingPlanName="x")


def test_errors_come_back_in_the_stubber_format(clients: Any) -> None:
    with pytest.raises(ClientError) as exc:
        clients.ec2.describe_capacity_block_offerings(**SEARCH | {"CapacityDurationHours": 25})
    response = exc.value.response
    assert response["Error"]["Code"] == "InvalidParameterValue"
    assert response["Error"]["Message"]
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert exc.value.operation_name == "DescribeCapacityBlockOfferings"


def test_answers_carry_response_metadata(clients: Any) -> None:
    meta = clients.ec2.describe_capacity_block_offerings(**SEARCH)["ResponseMetadata"]
    assert meta["HTTPStatusCode"] == 200 and meta["RequestId"]


def test_the_session_is_shared_but_markets_are_not(market: SandboxMarket) -> None:
    other = SandboxMarket(ManualClock(NOW))
    mine, theirs = sandbox_clients(market, "us-east-1"), sandbox_clients(other, "us-east-1")
    offer = mine.ec2.describe_capacity_block_offerings(**SEARCH)["CapacityBlockOfferings"][0]
    mine.ec2.purchase_capacity_block(
        CapacityBlockOfferingId=offer["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
    )
    assert len(mine.ec2.describe_capacity_blocks()["CapacityBlocks"]) == 1
    assert theirs.ec2.describe_capacity_blocks()["CapacityBlocks"] == []
    assert mine.pricing.meta.region_name == "us-east-1"


def test_installing_a_second_market_on_a_client_keeps_the_first(market: SandboxMarket) -> None:
    client = boto3.session.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    ).client("ec2")
    install_sandbox(client, market)
    other = SandboxMarket(ManualClock(NOW))
    other.conditions.throttle(1)
    install_sandbox(client, other)
    assert client.describe_capacity_block_offerings(**SEARCH)["CapacityBlockOfferings"]


def test_the_market_answers_only_its_operations(market: SandboxMarket) -> None:
    assert "DescribeInstanceTypes" not in market.operations("ec2")
    assert market.operations("s3") == ()
    assert set(market.operations("pricing")) == {"GetProducts"}


# --- validating responses against the output shapes -----------------------------------


def offering_response() -> dict[str, Any]:
    return {
        "CapacityBlockOfferings": [
            {
                "CapacityBlockOfferingId": "cb-0123456789abcdefg",
                "InstanceType": "p5.48xlarge",
                "InstanceCount": 2,
                "StartDate": NOW,
                "EndDate": NOW + DAY,
                "UpfrontFee": "1.00",
                "Tenancy": "default",
            }
        ]
    }


def test_validate_response_accepts_what_aws_could_send() -> None:
    shape = model("ec2").operation_model("DescribeCapacityBlockOfferings").output_shape
    validate_response(shape, offering_response() | {"ResponseMetadata": {"RequestId": "x"}})


@pytest.mark.parametrize(
    ("breakage", "complaint"),
    [
        (
            {"InstanceCount": "2"},
            "Invalid type for parameter CapacityBlockOfferings[0].InstanceCount",
        ),
        ({"StartDate": "next tuesday"}, "StartDate"),
        ({"Tenancy": "shared"}, "enum value set: [default, dedicated]"),
        ({"Colour": "blue"}, 'Unknown parameter in CapacityBlockOfferings[0]: "Colour"'),
    ],
)
def test_validate_response_catches_a_broken_ec2_response(
    breakage: dict[str, Any], complaint: str
) -> None:
    shape = model("ec2").operation_model("DescribeCapacityBlockOfferings").output_shape
    broken = offering_response()
    broken["CapacityBlockOfferings"][0] |= breakage
    with pytest.raises(SandboxResponseError, match=re.escape(complaint)):
        validate_response(shape, broken)


def test_validate_response_catches_missing_members_patterns_and_maximums() -> None:
    sagemaker = model("sagemaker")
    search = sagemaker.operation_model("SearchTrainingPlanOfferings").output_shape
    with pytest.raises(SandboxResponseError, match="TrainingPlanOfferings"):
        validate_response(search, {})
    describe = sagemaker.operation_model("DescribeTrainingPlan").output_shape
    plan = {"TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p-1"}
    with pytest.raises(SandboxResponseError, match="regular expression"):
        validate_response(describe, plan | {"TrainingPlanName": "bad_name", "Status": "Active"})
    with pytest.raises(SandboxResponseError, match="less than or equal to 59"):
        validate_response(
            describe,
            plan | {"TrainingPlanName": "p-1", "Status": "Active", "DurationMinutes": 60},
        )
    with pytest.raises(SandboxResponseError, match="only ResponseMetadata"):
        validate_response(None, {"Anything": 1})


# --- scarcity and faults --------------------------------------------------------------


def starts(clients: Any, **params: Any) -> list[datetime]:
    answer = clients.ec2.describe_capacity_block_offerings(**SEARCH | params)
    return [o["StartDate"] for o in answer["CapacityBlockOfferings"]]


def test_by_default_every_valid_request_finds_offerings(clients: Any) -> None:
    assert len(starts(clients)) == 6
    plans = clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH)
    assert plans["TrainingPlanOfferings"]


def test_sold_out_dates_for_one_type(clients: Any, market: SandboxMarket) -> None:
    market.conditions.sell_out(NOW, NOW + 3 * DAY, "p5.48xlarge")
    # A 2-day block overlapping the sold-out days is gone; the first one left starts after.
    assert starts(clients)[0] == NOW + 3 * DAY
    other = starts(clients, InstanceType="p5en.48xlarge")
    assert other[0] == NOW
    plans = clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH)
    first = plans["TrainingPlanOfferings"][0]["ReservedCapacityOfferings"][0]
    assert first["StartTime"] == NOW + 3 * DAY


def test_sold_out_for_every_type(clients: Any, market: SandboxMarket) -> None:
    market.conditions.sell_out(NOW, NOW + timedelta(weeks=9))
    assert starts(clients) == []
    assert starts(clients, InstanceType="p5en.48xlarge") == []


def test_buying_after_a_sell_out_fails(clients: Any, market: SandboxMarket) -> None:
    offer = clients.ec2.describe_capacity_block_offerings(**SEARCH)["CapacityBlockOfferings"][0]
    market.conditions.sell_out(NOW, NOW + DAY)
    with pytest.raises(ClientError) as exc:
        clients.ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
        )
    assert code_of(exc) == "InsufficientInstanceCapacity"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_capped_instances_per_offering(clients: Any, market: SandboxMarket) -> None:
    market.conditions.cap_instances(8, "ml.p5.48xlarge")  # one stock for both markets
    assert starts(clients, InstanceCount=8)
    assert starts(clients, InstanceCount=9) == []
    assert starts(clients, InstanceType="p5en.48xlarge", InstanceCount=16)
    plans = clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH | {"InstanceCount": 16})
    assert plans["TrainingPlanOfferings"] == []
    market.conditions.cap_instances(4)
    assert starts(clients, InstanceType="p5en.48xlarge", InstanceCount=8) == []


def test_throttling_the_capacity_block_search(clients: Any, market: SandboxMarket) -> None:
    market.conditions.throttle(2, "DescribeCapacityBlockOfferings")
    for _ in range(2):
        with pytest.raises(ClientError) as exc:
            starts(clients)
        assert code_of(exc) == "CapacityBlockDescribeLimitExceeded"
    assert starts(clients)
    assert clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH)


def test_throttling_goes_through_the_clients_own_retries(
    clients: Any, market: SandboxMarket, sdk_retry_pauses: list[float]
) -> None:
    # Fewer throttles than the client's attempts: botocore retries (with backoff) and
    # the call succeeds, saying how many times it was re-sent.
    market.conditions.throttle(3)
    answer = clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH)
    assert answer["ResponseMetadata"]["RetryAttempts"] == 3
    assert len(sdk_retry_pauses) == 3
    # More than its five attempts: the throttle reaches the caller, in each service's words
    # (EC2's with HTTP 503).
    calls = {
        "sagemaker": lambda: clients.sagemaker.search_training_plan_offerings(**PLAN_SEARCH),
        "ec2": lambda: clients.ec2.describe_capacity_blocks(),
        "pricing": lambda: clients.pricing.get_products(ServiceCode="AmazonEC2"),
    }
    seen = {}
    for service, call in calls.items():
        market.conditions.throttle(5)
        with pytest.raises(ClientError) as exc:
            call()
        meta = exc.value.response["ResponseMetadata"]
        seen[service] = (code_of(exc), meta["HTTPStatusCode"], meta["RetryAttempts"])
    assert seen == {
        "sagemaker": ("ThrottlingException", 400, 4),
        "ec2": ("RequestLimitExceeded", 503, 4),
        "pricing": ("ThrottlingException", 400, 4),
    }
    assert clients.ec2.describe_capacity_blocks()["CapacityBlocks"] == []


def test_injected_latency_sleeps_before_each_answer() -> None:
    slept: list[float] = []
    market = SandboxMarket(ManualClock(NOW), sleep=slept.append)
    clients = sandbox_clients(market, "us-east-1")
    clients.ec2.describe_capacity_blocks()
    assert slept == []
    market.conditions.latency_ms = 250
    clients.ec2.describe_capacity_blocks()
    clients.sagemaker.list_training_plans()
    assert slept == [0.25, 0.25]


# --- storage, offering ids, zones -----------------------------------------------------


def test_in_memory_store_is_insert_only_and_json_only() -> None:
    store = InMemoryMarketStore()
    record = {"name": "a", "parts": [{"zone": "us-east-1a"}]}
    assert store.add("plan", "a", record)
    assert not store.add("plan", "a", {"name": "other"})
    record["name"] = "changed afterwards"
    assert store.get("plan", "a") == {"name": "a", "parts": [{"zone": "us-east-1a"}]}
    assert store.get("plan", "b") is None and store.get("block", "a") is None
    assert store.records("plan") == [{"name": "a", "parts": [{"zone": "us-east-1a"}]}]
    with pytest.raises(TypeError, match="JSON serializable"):
        store.add("plan", "c", {"when": NOW})


def test_the_market_keeps_purchases_in_the_store_it_is_given() -> None:
    store = InMemoryMarketStore()
    clients = sandbox_clients(SandboxMarket(ManualClock(NOW), store=store), "us-east-1")
    offer = clients.ec2.describe_capacity_block_offerings(**SEARCH)["CapacityBlockOfferings"][0]
    clients.ec2.purchase_capacity_block(
        CapacityBlockOfferingId=offer["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
    )
    (record,) = store.records("capacity-block")
    assert json.loads(json.dumps(record)) == record
    assert record["instance_type"] == "p5.48xlarge" and record["count"] == 8


def test_offering_ids_round_trip_and_refuse_tampering() -> None:
    block = BlockOffer("p5.48xlarge", "us-east-1a", 8, NOW, NOW + 2 * DAY, "13290.24")
    assert BlockOffer.from_offering_id(block.offering_id()) == block
    text = block.offering_id()
    for bad in (text[:-1], text.replace("cb-", "cx-"), text[:10] + "0" + text[11:], "cb-!!"):
        with pytest.raises(BadOfferingId, match=r"start with|base32|checksum|offering"):
            BlockOffer.from_offering_id(bad)
    with pytest.raises(BadOfferingId, match="does not start with"):
        PlanOffer.from_offering_id(text)


def test_the_longest_plan_offering_id_fits_sagemaker_limits() -> None:
    parts = (
        PlanPart("ap-northeast-1a", NOW, NOW + 91 * DAY),
        PlanPart("ap-northeast-1d", NOW + 91 * DAY, NOW + 182 * DAY),
    )
    targets = ("training-job", "hyperpod-cluster", "endpoint", "studio-apps")
    plan = PlanOffer("p6-b300.48xlarge", 64, parts, "123456789.99", targets)
    text = plan.offering_id()
    assert re.fullmatch(r"[a-z0-9\-]+", text) and len(text) <= 256
    assert PlanOffer.from_offering_id(text) == plan


def test_every_catalog_region_has_zones() -> None:
    catalog = default_catalog()
    regions = {
        region
        for name in catalog.instance_types
        for offering in (
            catalog.instance(name).capacity_blocks,
            catalog.instance(name).training_plans,
        )
        for region in offering.regions
    }
    assert regions <= set(DEFAULT_ZONES)
    assert zone_id("us-east-1a") == "use1-az1"
    assert zone_id("ap-northeast-1d") == "apne1-az4"
