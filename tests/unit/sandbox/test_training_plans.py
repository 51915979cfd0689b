"""The sandbox's SageMaker training plans, through a real boto3 SageMaker client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from tests.unit.sandbox.conftest import DAY, NOW


def sagemaker_client(market: SandboxMarket, region: str = "us-east-1") -> Any:
    return sandbox_clients(market, region).sagemaker


@pytest.fixture(scope="module")
def shared() -> Any:
    """A client on a market nobody buys from or moves: for searches only."""
    return sagemaker_client(SandboxMarket(ManualClock(NOW)))


@pytest.fixture
def sm(market: SandboxMarket) -> Any:
    return sagemaker_client(market)


def search(client: Any, **params: Any) -> list[dict[str, Any]]:
    defaults = {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 4,
        "DurationHours": 72,
        "TargetResources": ["training-job"],
    }
    params = {k: v for k, v in (defaults | params).items() if v is not None}
    result: list[dict[str, Any]] = client.search_training_plan_offerings(**params)[
        "TrainingPlanOfferings"
    ]
    return result


def error_of(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = exc.value.response["Error"]
    return error["Code"], error["Message"]


def create(client: Any, offer: dict[str, Any], name: str = "gpu-bot-req-1") -> str:
    arn: str = client.create_training_plan(
        TrainingPlanName=name,
        TrainingPlanOfferingId=offer["TrainingPlanOfferingId"],
        Tags=[{"Key": "gpu-bot:request-id", "Value": name}],
    )["TrainingPlanArn"]
    return arn


# --- search rules ---------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 4, 8, 16, 32, 64])
def test_allowed_instance_counts(shared: Any, count: int) -> None:
    (part,) = search(shared, InstanceCount=count)[0]["ReservedCapacityOfferings"]
    assert part["InstanceCount"] == count


@pytest.mark.parametrize("count", [3, 5, 63, 65, 128, 0])
def test_other_instance_counts_are_refused(shared: Any, count: int) -> None:
    with pytest.raises(ClientError) as exc:
        search(shared, InstanceCount=count)
    code, message = error_of(exc)
    assert code == "ValidationException" and "1, 2, 4, 8, 16, 32, 64" in message


def test_count_above_the_model_maximum_is_refused_as_sagemaker_does(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        search(shared, InstanceCount=300)
    code, message = error_of(exc)
    assert code == "ValidationException"
    assert message == (
        "1 validation error detected: Value '300' at 'instanceCount' failed to satisfy "
        "constraint: Member must have value less than or equal to 256"
    )


@pytest.mark.parametrize("days", [1, 14, 15, 100, 182])
def test_whole_day_durations_up_to_182_days(shared: Any, days: int) -> None:
    offer = search(shared, DurationHours=days * 24)[0]
    assert (offer["DurationHours"], offer["DurationMinutes"]) == (days * 24, 0)


@pytest.mark.parametrize("hours", [12, 36, 25, 183 * 24, 189 * 24])
def test_other_durations_are_refused(shared: Any, hours: int) -> None:
    with pytest.raises(ClientError) as exc:
        search(shared, DurationHours=hours)
    assert error_of(exc)[0] == "ValidationException"


def test_instance_type_outside_the_model_enum_is_refused(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        search(shared, InstanceType="ml.g5.48xlarge")
    code, message = error_of(exc)
    assert code == "ValidationException" and "enum value set" in message


@pytest.mark.parametrize(
    ("instance_type", "region"),
    [
        ("ml.p5e.48xlarge", "us-east-1"),  # the catalog sells it in us-east-2 and us-west-2
        ("ml.p6e-gb200.36xlarge", "us-east-1"),  # in the model's enum, not in the catalog
    ],
)
def test_types_not_offered_in_the_region_find_nothing(instance_type: str, region: str) -> None:
    client = sagemaker_client(SandboxMarket(ManualClock(NOW)), region)
    assert search(client, InstanceType=instance_type) == []


def test_target_resources_are_required_and_respected(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        search(shared, TargetResources=None)
    assert error_of(exc)[0] == "ValidationException"
    offer = search(shared, TargetResources=["endpoint"])[0]
    assert offer["TargetResources"] == ["endpoint"]


def test_first_offering_starts_at_the_first_1130_utc_after_start_time_after(shared: Any) -> None:
    after = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
    found = search(shared, StartTimeAfter=after)
    assert found[0]["ReservedCapacityOfferings"][0]["StartTime"] == datetime(
        2026, 3, 11, 11, 30, tzinfo=UTC
    )
    assert found[0]["RequestedStartTimeAfter"] == after
    assert len(found) == 3


def test_end_time_before_bounds_the_offerings(shared: Any) -> None:
    found = search(shared, StartTimeAfter=NOW, EndTimeBefore=NOW + 4 * DAY)
    assert [o["ReservedCapacityOfferings"][-1]["EndTime"] for o in found] == [
        NOW + 3 * DAY,
        NOW + 4 * DAY,
    ]
    assert found[0]["RequestedEndTimeBefore"] == NOW + 4 * DAY


def test_long_plans_come_in_two_consecutive_parts(shared: Any) -> None:
    (single,) = search(shared, DurationHours=14 * 24)[0]["ReservedCapacityOfferings"]
    assert single["DurationHours"] == 14 * 24
    offer = search(shared, DurationHours=15 * 24)[0]
    first, second = offer["ReservedCapacityOfferings"]
    assert first["EndTime"] == second["StartTime"]
    assert (first["DurationHours"], second["DurationHours"]) == (8 * 24, 7 * 24)
    assert offer["DurationHours"] == first["DurationHours"] + second["DurationHours"]
    assert first["InstanceType"] == second["InstanceType"] == "ml.p5.48xlarge"


def test_upfront_fee_is_catalog_price_times_hours_times_count(shared: Any) -> None:
    # p5.48xlarge training plans: On-Demand 55.04 x 0.275 = 15.136 USD per instance-hour.
    assert search(shared)[0]["UpfrontFee"] == "4359.17"  # 15.136 x 72 h x 4
    assert search(shared)[0]["CurrencyCode"] == "USD"


# --- CreateTrainingPlan ---------------------------------------------------------------


def test_create_returns_the_arn_and_describe_shows_the_plan(sm: Any) -> None:
    offer = search(sm, DurationHours=21 * 24, TargetResources=["endpoint", "training-job"])[0]
    arn = create(sm, offer)
    assert arn == "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gpu-bot-req-1"
    for name in ("gpu-bot-req-1", arn):
        plan = sm.describe_training_plan(TrainingPlanName=name)
        assert plan["TrainingPlanArn"] == arn and plan["Status"] == "Pending"
    assert plan["UpfrontFee"] == offer["UpfrontFee"]
    assert plan["TargetResources"] == ["training-job", "endpoint"]
    assert plan["TotalInstanceCount"] == 4
    parts = plan["ReservedCapacitySummaries"]
    assert [p["StartTime"] for p in parts] == [
        p["StartTime"] for p in offer["ReservedCapacityOfferings"]
    ]
    assert all(p["ReservedCapacityArn"].startswith("arn:aws:sagemaker:") for p in parts)


def test_a_name_can_be_used_once_and_the_second_create_says_resource_in_use(
    sm: Any, clock: ManualClock
) -> None:
    offer = search(sm)[0]
    create(sm, offer)
    clock.set(offer["ReservedCapacityOfferings"][0]["StartTime"] + DAY)  # offering expired
    with pytest.raises(sm.exceptions.ResourceInUse) as exc:
        create(sm, offer)
    assert "gpu-bot-req-1" in error_of(exc)[1]


def test_names_must_match_the_model_pattern(sm: Any) -> None:
    with pytest.raises(ClientError) as exc:
        create(sm, search(sm)[0], name="bad_name")
    code, message = error_of(exc)
    assert code == "ValidationException" and "trainingPlanName" in message


def test_garbled_expired_and_foreign_offerings_are_not_found(
    sm: Any, market: SandboxMarket, clock: ManualClock
) -> None:
    offer = search(sm)[0]
    good = offer["TrainingPlanOfferingId"]
    foreign = search(sagemaker_client(market, "us-west-2"))[0]["TrainingPlanOfferingId"]
    for bad in (
        "tpo-0123456789abcdef",
        good[:-2] + ("aa" if not good.endswith("aa") else "bb"),
        foreign,
    ):
        with pytest.raises(sm.exceptions.ResourceNotFound, match="CreateTrainingPlan"):
            sm.create_training_plan(TrainingPlanName="plan-x", TrainingPlanOfferingId=bad)
    clock.set(offer["ReservedCapacityOfferings"][0]["StartTime"] + timedelta(seconds=1))
    with pytest.raises(sm.exceptions.ResourceNotFound) as exc:
        create(sm, offer)
    assert "no longer available" in error_of(exc)[1]


def test_unknown_plans_are_not_found(sm: Any) -> None:
    with pytest.raises(sm.exceptions.ResourceNotFound, match="nope"):
        sm.describe_training_plan(TrainingPlanName="nope")


def test_lifecycle_follows_the_clock_plan_and_parts(sm: Any, clock: ManualClock) -> None:
    offer = search(sm, DurationHours=15 * 24)[1]
    create(sm, offer)
    first, second = offer["ReservedCapacityOfferings"]

    def statuses() -> tuple[str, list[str]]:
        plan = sm.describe_training_plan(TrainingPlanName="gpu-bot-req-1")
        return plan["Status"], [p["Status"] for p in plan["ReservedCapacitySummaries"]]

    assert statuses() == ("Pending", ["Pending", "Pending"])
    clock.advance(timedelta(minutes=2))
    assert statuses() == ("Scheduled", ["Scheduled", "Scheduled"])
    clock.set(first["StartTime"])
    assert statuses() == ("Active", ["Active", "Scheduled"])
    assert (
        sm.describe_training_plan(TrainingPlanName="gpu-bot-req-1")["AvailableInstanceCount"] == 4
    )
    clock.set(second["StartTime"])
    assert statuses() == ("Active", ["Expired", "Active"])
    clock.set(second["EndTime"])
    assert statuses() == ("Expired", ["Expired", "Expired"])


def test_failed_payment_ends_in_failed_with_a_message(
    market: SandboxMarket, clock: ManualClock
) -> None:
    sm = sagemaker_client(market)
    market.conditions.payments_fail = True
    create(sm, search(sm)[0])
    clock.advance(timedelta(minutes=2))
    plan = sm.describe_training_plan(TrainingPlanName="gpu-bot-req-1")
    assert plan["Status"] == "Failed" and "payment" in plan["StatusMessage"]


# --- ListTrainingPlans ----------------------------------------------------------------


def test_list_filters_sorts_and_paginates(sm: Any, clock: ManualClock) -> None:
    found = search(sm)
    for i, offer in enumerate(found):
        create(sm, offer, name=f"plan-{i}")
    clock.set(found[0]["ReservedCapacityOfferings"][0]["StartTime"] + timedelta(hours=1))
    everything = sm.list_training_plans()["TrainingPlanSummaries"]
    assert [p["TrainingPlanName"] for p in everything] == ["plan-0", "plan-1", "plan-2"]
    active = sm.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])
    assert [p["TrainingPlanName"] for p in active["TrainingPlanSummaries"]] == ["plan-0"]
    newest_first = sm.list_training_plans(SortBy="StartTime", SortOrder="Descending")
    assert newest_first["TrainingPlanSummaries"][0]["TrainingPlanName"] == "plan-2"
    later = sm.list_training_plans(
        StartTimeAfter=found[1]["ReservedCapacityOfferings"][0]["StartTime"]
    )
    assert [p["TrainingPlanName"] for p in later["TrainingPlanSummaries"]] == ["plan-1", "plan-2"]
    pages = sm.get_paginator("list_training_plans").paginate(PaginationConfig={"PageSize": 2})
    assert [len(p["TrainingPlanSummaries"]) for p in pages] == [2, 1]
    with pytest.raises(ClientError) as exc:
        sm.list_training_plans(NextToken="nonsense")
    assert error_of(exc)[0] == "ValidationException"
