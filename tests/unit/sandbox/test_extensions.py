"""The sandbox's extensions, through real boto3 clients (botocore validates first)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from tests.unit.sandbox.conftest import DAY
from tests.unit.sandbox.test_capacity_blocks import buy, error_of, offerings
from tests.unit.sandbox.test_training_plans import create, search


def bought_block(market: SandboxMarket, clock: ManualClock) -> tuple[Any, dict[str, Any]]:
    ec2 = sandbox_clients(market, "us-east-1").ec2
    offer = offerings(ec2, CapacityDurationHours=48)[0]
    reservation = buy(ec2, offer)["CapacityReservation"]
    clock.set(offer["StartDate"] + DAY)  # active, one day left
    return ec2, reservation


def block_offers(ec2: Any, reservation_id: str, hours: int = 24) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = ec2.describe_capacity_block_extension_offerings(
        CapacityReservationId=reservation_id, CapacityBlockExtensionDurationHours=hours
    )["CapacityBlockExtensionOfferings"]
    return result


def test_a_block_extension_is_priced_from_its_end_and_moves_the_end_once(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    rid, end = reservation["CapacityReservationId"], reservation["EndDate"]
    [offer] = block_offers(ec2, rid, 48)
    assert offer["CapacityBlockExtensionStartDate"] == end
    assert offer["CapacityBlockExtensionEndDate"] == end + 2 * DAY
    # 2 instances x 48 h at the catalog's Capacity Block rate
    assert float(offer["UpfrontFee"]) > 0
    ext = ec2.purchase_capacity_block_extension(
        CapacityBlockExtensionOfferingId=offer["CapacityBlockExtensionOfferingId"],
        CapacityReservationId=rid,
    )["CapacityBlockExtensions"][0]
    assert ext["CapacityBlockExtensionEndDate"] == end + 2 * DAY
    [after] = ec2.describe_capacity_reservations(CapacityReservationIds=[rid])[
        "CapacityReservations"
    ]
    assert after["EndDate"] == end + 2 * DAY
    # The same offering again: its start is no longer the block's end, so it is refused.
    with pytest.raises(ClientError) as exc:
        ec2.purchase_capacity_block_extension(
            CapacityBlockExtensionOfferingId=offer["CapacityBlockExtensionOfferingId"],
            CapacityReservationId=rid,
        )
    assert error_of(exc)[0] == "InvalidParameterValue"
    assert (
        ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"][0][
            "EndDate"
        ]
        == end + 2 * DAY
    )


def test_a_block_is_not_extended_in_its_last_hour_nor_after_it_ended(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    clock.set(reservation["EndDate"] - DAY / 48)  # 30 minutes left
    with pytest.raises(ClientError) as exc:
        block_offers(ec2, reservation["CapacityReservationId"])
    assert "between 1 hour and 56 days" in error_of(exc)[1]
    clock.set(reservation["EndDate"] + DAY)
    with pytest.raises(ClientError) as exc:
        block_offers(ec2, reservation["CapacityReservationId"])
    assert "expired" in error_of(exc)[1]


def test_extension_durations_follow_the_purchase_steps(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    with pytest.raises(ClientError) as exc:
        block_offers(ec2, reservation["CapacityReservationId"], 36)
    assert "36 hours is not valid" in error_of(exc)[1]
    with pytest.raises(ClientError) as exc:
        block_offers(ec2, "cr-nope")
    assert error_of(exc)[0] == "InvalidCapacityReservationId.NotFound"


def test_botocore_validates_before_the_market_answers(market: SandboxMarket) -> None:
    from botocore.exceptions import ParamValidationError

    ec2 = sandbox_clients(market, "us-east-1").ec2
    with pytest.raises(ParamValidationError):
        ec2.describe_capacity_block_extension_offerings(CapacityReservationId="cr-1")


def test_the_extension_price_follows_the_market(market: SandboxMarket, clock: ManualClock) -> None:
    ec2, reservation = bought_block(market, clock)
    [before] = block_offers(ec2, reservation["CapacityReservationId"])
    market.conditions.price_factor = 1.5
    [after] = block_offers(ec2, reservation["CapacityReservationId"])
    assert float(after["UpfrontFee"]) == pytest.approx(float(before["UpfrontFee"]) * 1.5, 0.01)
    assert after["CapacityBlockExtensionOfferingId"] != before["CapacityBlockExtensionOfferingId"]


def test_a_training_plan_is_extended_through_its_arn_exactly_once(
    market: SandboxMarket, clock: ManualClock
) -> None:
    sm = sandbox_clients(market, "us-east-1").sagemaker
    offer = search(sm, DurationHours=72)[0]
    arn = create(sm, offer)
    plan = sm.describe_training_plan(TrainingPlanName=arn)
    clock.set(plan["StartTime"] + DAY)
    found = sm.search_training_plan_offerings(TrainingPlanArn=arn, DurationHours=48)
    assert found["TrainingPlanOfferings"] == []
    [ext] = found["TrainingPlanExtensionOfferings"]
    assert ext["StartDate"] == plan["EndTime"]
    assert ext["EndDate"] == plan["EndTime"] + 2 * DAY
    done = sm.extend_training_plan(
        TrainingPlanExtensionOfferingId=ext["TrainingPlanExtensionOfferingId"]
    )["TrainingPlanExtensions"][0]
    assert done["EndDate"] == plan["EndTime"] + 2 * DAY
    assert sm.describe_training_plan(TrainingPlanName=arn)["EndTime"] == plan["EndTime"] + 2 * DAY
    with pytest.raises(ClientError) as exc:
        sm.extend_training_plan(
            TrainingPlanExtensionOfferingId=ext["TrainingPlanExtensionOfferingId"]
        )
    assert error_of(exc)[0] == "ResourceNotFound"


def test_extending_an_unknown_plan_is_refused(market: SandboxMarket) -> None:
    sm = sandbox_clients(market, "us-east-1").sagemaker
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nope"
    with pytest.raises(ClientError) as exc:
        sm.search_training_plan_offerings(TrainingPlanArn=arn)
    assert error_of(exc)[0] == "ResourceNotFound"
