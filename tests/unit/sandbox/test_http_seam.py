"""The sandbox answers at botocore's HTTP seam: requests are read back from the wire and
held to the service model (patterns included), answers go through botocore's parser, and
faults after a purchase committed travel through the client's own retry handler."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from aws_sandbox import AnswerFault, SandboxMarket, sandbox_client
from aws_sandbox.shapes import compiled, request_violations
from tests.unit.sandbox.conftest import DAY, NOW

RETRYING = Config(retries={"mode": "standard", "total_max_attempts": 5})
ONCE = Config(retries={"mode": "standard", "total_max_attempts": 1})


def block_offering(ec2: Any) -> dict[str, Any]:
    return ec2.describe_capacity_block_offerings(
        InstanceType="p5.48xlarge",
        InstanceCount=2,
        CapacityDurationHours=48,
        StartDateRange=NOW + 3 * DAY,
    )["CapacityBlockOfferings"][0]


def plan_offering(sm: Any) -> dict[str, Any]:
    return sm.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge",
        InstanceCount=2,
        DurationHours=48,
        StartTimeAfter=NOW + 3 * DAY,
        TargetResources=["training-job"],
    )["TrainingPlanOfferings"][0]


def test_every_pattern_of_the_models_compiles_so_none_is_skipped() -> None:
    session = botocore.session.get_session()
    patterns = set()
    for service in ("ec2", "sagemaker", "pricing", "sts"):
        model = session.get_service_model(service)
        for name in model.shape_names:
            pattern = model.shape_for(name).metadata.get("pattern")
            if pattern:
                patterns.add(pattern)
    assert len(patterns) > 50
    for pattern in patterns:
        compiled(pattern)  # raises for one the sandbox could not check


def test_a_comma_in_a_sagemaker_tag_value_is_refused_as_sagemaker_refuses_it(
    market: SandboxMarket,
) -> None:
    sm = sandbox_client(market, "sagemaker", "us-east-1")
    offer = plan_offering(sm)
    with pytest.raises(ClientError) as refused:
        sm.create_training_plan(
            TrainingPlanName="gpu-bot-gpu-r1-a1",
            TrainingPlanOfferingId=offer["TrainingPlanOfferingId"],
            Tags=[{"Key": "gpu-bot:approvers", "Value": "U0ALICE,U0BOB"}],
        )
    error = refused.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert "tags.1.member.value" in error["Message"] and "U0ALICE,U0BOB" in error["Message"]
    # A space is what SageMaker's pattern allows between them: the plan is bought.
    sm.create_training_plan(
        TrainingPlanName="gpu-bot-gpu-r1-a1",
        TrainingPlanOfferingId=offer["TrainingPlanOfferingId"],
        Tags=[{"Key": "gpu-bot:approvers", "Value": "U0ALICE U0BOB"}],
    )
    assert market.bought()["training-plan"] == 1


def test_unicode_classes_in_a_pattern_are_checked() -> None:
    shape = botocore.session.get_session().get_service_model("sagemaker").shape_for("TagValue")
    assert request_violations(shape, "élan vital/ok=1") == []  # \p{L}, \p{Z}, /, =
    assert request_violations(shape, "a;b")  # ; is in no class


def test_what_the_sandbox_reads_is_what_botocore_wrote(market: SandboxMarket) -> None:
    # Nested lists of structures, timestamps and booleans, through EC2's query protocol.
    ec2 = sandbox_client(market, "ec2", "us-east-1")
    offer = block_offering(ec2)
    bought = ec2.purchase_capacity_block(
        CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
        InstancePlatform="Linux/UNIX",
        TagSpecifications=[
            {"ResourceType": "capacity-reservation", "Tags": [{"Key": "a", "Value": "1"}]},
            {"ResourceType": "capacity-block", "Tags": [{"Key": "b", "Value": "2"}]},
        ],
    )
    reservation = bought["CapacityReservation"]
    assert reservation["Tags"] == [{"Key": "a", "Value": "1"}]
    assert bought["CapacityBlocks"][0]["Tags"] == [{"Key": "b", "Value": "2"}]
    assert reservation["StartDate"] == offer["StartDate"]  # a timestamp, both ways
    assert reservation["EbsOptimized"] is True  # a boolean, parsed by botocore
    assert bought["ResponseMetadata"]["RetryAttempts"] == 0


@pytest.mark.parametrize(
    "fault", [AnswerFault.READ_TIMEOUT, AnswerFault.CONNECTION_RESET, AnswerFault.SERVER_ERROR]
)
def test_an_answer_lost_after_a_purchase_is_resent_by_a_retrying_client(
    market: SandboxMarket, fault: AnswerFault, sdk_retry_pauses: list[float]
) -> None:
    # Why PurchaseCapacityBlock must not go out on a retrying client: botocore re-sends
    # it after the lost answer, and the re-send buys a second block (the offering is
    # still on sale) or, here, fails on the first block's offering.
    ec2 = sandbox_client(market, "ec2", "us-east-1", RETRYING)
    offer = block_offering(ec2)
    market.conditions.lose_answers("PurchaseCapacityBlock", fault)
    answer = ec2.purchase_capacity_block(
        CapacityBlockOfferingId=offer["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
    )
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1  # botocore sent it again
    assert market.purchase_calls() == 2
    assert market.bought()["capacity-block"] == 2
    assert len(sdk_retry_pauses) == 1


@pytest.mark.parametrize(
    ("fault", "raised"),
    [
        (AnswerFault.READ_TIMEOUT, ReadTimeoutError),
        (AnswerFault.CONNECTION_RESET, ConnectionClosedError),
        (AnswerFault.SERVER_ERROR, ClientError),
    ],
)
def test_a_client_that_sends_once_raises_and_buys_once(
    market: SandboxMarket, fault: AnswerFault, raised: type[Exception]
) -> None:
    ec2 = sandbox_client(market, "ec2", "us-east-1", ONCE)
    offer = block_offering(ec2)
    market.conditions.lose_answers("PurchaseCapacityBlock", fault)
    with pytest.raises(raised):
        ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
        )
    assert market.purchase_calls() == 1
    assert market.bought()["capacity-block"] == 1  # it happened, whatever the caller heard


def test_a_dry_run_neither_meets_a_fault_nor_waits(market: SandboxMarket) -> None:
    ec2 = sandbox_client(market, "ec2", "us-east-1", ONCE)
    offer = block_offering(ec2)
    market.conditions.lose_answers("PurchaseCapacityBlock", AnswerFault.READ_TIMEOUT)
    market.conditions.hold("PurchaseCapacityBlock")
    with pytest.raises(ClientError) as dry:
        ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
            DryRun=True,
        )
    assert dry.value.response["Error"]["Code"] == "DryRunOperation"


def test_a_purchase_whose_answer_was_lost_can_show_late_in_describes(
    market: SandboxMarket, clock: Any
) -> None:
    ec2 = sandbox_client(market, "ec2", "us-east-1", ONCE)
    offer = block_offering(ec2)
    market.conditions.lose_answers(
        "PurchaseCapacityBlock", AnswerFault.READ_TIMEOUT, shown_after=timedelta(minutes=1)
    )
    with pytest.raises(ReadTimeoutError):
        ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
        )
    assert ec2.describe_capacity_blocks()["CapacityBlocks"] == []
    clock.advance(timedelta(minutes=1))
    assert len(ec2.describe_capacity_blocks()["CapacityBlocks"]) == 1


def test_throttling_and_server_errors_are_retried_by_the_client_not_the_caller(
    market: SandboxMarket, sdk_retry_pauses: list[float]
) -> None:
    ec2 = sandbox_client(market, "ec2", "us-east-1", RETRYING)
    market.conditions.throttle(2, "DescribeCapacityBlocks")
    answer = ec2.describe_capacity_blocks()
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(sdk_retry_pauses) == 2
