"""The sandbox under the IAM policies in deploy/: what they do not allow is refused as AWS
refuses it (EC2 UnauthorizedOperation 403, SageMaker AccessDeniedException 400, naming the
action and the resource), through real boto3 clients, and nothing is bought."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SANDBOX_ACCOUNT_ID, SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from tests.iam_calls import POLICY_FILES, called
from tests.iam_sandbox import PEOPLES_CALLS, guard, without
from tests.unit.sandbox.conftest import DAY

REGION = "us-east-1"
TAGS = [{"Key": "gpu-bot:request-id", "Value": "R1"}, {"Key": "gpu-bot:namespace", "Value": "t"}]
ARN = f"arn:aws:{{}}:{REGION}:{SANDBOX_ACCOUNT_ID}:{{}}"


def _clients(clock: ManualClock, paths: Any = None) -> tuple[SandboxMarket, Any]:
    market = SandboxMarket(clock, iam=guard(paths) if paths else guard())
    return market, sandbox_clients(market, REGION)


def _refusal(call: Any, **params: Any) -> tuple[str, str, int]:
    with pytest.raises(ClientError) as refused:
        call(**params)
    response = refused.value.response
    return (
        response["Error"]["Code"],
        response["Error"]["Message"],
        response["ResponseMetadata"]["HTTPStatusCode"],
    )


def _block_offer(ec2: Any, clock: ManualClock) -> str:
    offers = ec2.describe_capacity_block_offerings(
        InstanceType="p5.48xlarge",
        InstanceCount=2,
        CapacityDurationHours=24,
        StartDateRange=clock.now() + 3 * DAY,
    )["CapacityBlockOfferings"]
    return str(offers[0]["CapacityBlockOfferingId"])


def _plan_offer(sm: Any, clock: ManualClock) -> str:
    offers = sm.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge",
        InstanceCount=2,
        DurationHours=72,
        StartTimeAfter=clock.now() + 3 * DAY,
        TargetResources=["training-job"],
    )["TrainingPlanOfferings"]
    return str(offers[0]["TrainingPlanOfferingId"])


def test_the_bot_never_makes_the_calls_left_unjudged() -> None:
    assert not PEOPLES_CALLS & set().union(*(called(p) for p in POLICY_FILES))


def test_an_untagged_block_purchase_is_refused_and_a_tagged_one_bought(clock: ManualClock) -> None:
    market, aws = _clients(clock)
    offer = _block_offer(aws.ec2, clock)
    buy = {"CapacityBlockOfferingId": offer, "InstancePlatform": "Linux/UNIX"}
    code, message, status = _refusal(aws.ec2.purchase_capacity_block, **buy)
    assert (code, status) == ("UnauthorizedOperation", 403)
    assert (
        "not authorized to perform: ec2:PurchaseCapacityBlock on resource: "
        f"{ARN.format('ec2', 'capacity-reservation/*')}" in message
    )
    assert market.bought()["capacity-block"] == 0 and market.purchase_calls() == 0
    tagged = [{"ResourceType": k, "Tags": TAGS} for k in ("capacity-reservation", "capacity-block")]
    aws.ec2.purchase_capacity_block(**buy, TagSpecifications=tagged)
    assert market.bought()["capacity-block"] == 1


def test_a_plan_without_its_dependent_reserved_capacity_is_refused(
    clock: ManualClock, tmp_path: Path
) -> None:
    market, aws = _clients(clock, without("TheReservedCapacityATrainingPlanCreates", tmp_path))
    plan = {
        "TrainingPlanName": "gpu-bot-r1",
        "TrainingPlanOfferingId": _plan_offer(aws.sagemaker, clock),
        "Tags": TAGS,
    }
    code, message, status = _refusal(aws.sagemaker.create_training_plan, **plan)
    assert (code, status) == ("AccessDeniedException", 400)
    assert (
        "not authorized to perform: sagemaker:CreateReservedCapacity on resource: "
        f"{ARN.format('sagemaker', 'reserved-capacity/*')}" in message
    )
    assert market.bought()["training-plan"] == 0
    # Under the shipped policies the same plan is bought.
    market, aws = _clients(clock)
    plan["TrainingPlanOfferingId"] = _plan_offer(aws.sagemaker, clock)
    aws.sagemaker.create_training_plan(**plan)
    assert market.bought()["training-plan"] == 1


def test_a_plan_not_named_by_the_bot_is_refused(clock: ManualClock) -> None:
    _, aws = _clients(clock)
    offer = _plan_offer(aws.sagemaker, clock)
    code, message, _ = _refusal(
        aws.sagemaker.create_training_plan,
        TrainingPlanName="someone-elses",
        TrainingPlanOfferingId=offer,
        Tags=TAGS,
    )
    assert code == "AccessDeniedException"
    assert f"on resource: {ARN.format('sagemaker', 'training-plan/someone-elses')}" in message


def test_only_instances_tagged_with_a_request_are_terminated(clock: ManualClock) -> None:
    _, aws = _clients(clock)

    def launch(tags: list[dict[str, str]]) -> str:
        made = aws.ec2.run_instances(  # a person launching: not judged by the bot's policies
            ImageId="ami-0123456789abcdef0",
            InstanceType="p5.48xlarge",
            MinCount=1,
            MaxCount=1,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}] if tags else [],
        )
        return str(made["Instances"][0]["InstanceId"])

    theirs, ours = launch([]), launch(TAGS[:1])
    code, message, status = _refusal(aws.ec2.terminate_instances, InstanceIds=[theirs])
    assert (code, status) == ("UnauthorizedOperation", 403)
    assert (
        f"ec2:TerminateInstances on resource: {ARN.format('ec2', f'instance/{theirs}')}" in message
    )
    done = aws.ec2.terminate_instances(InstanceIds=[ours])["TerminatingInstances"]
    assert [i["InstanceId"] for i in done] == [ours]


def test_an_action_no_policy_grants_is_refused(clock: ManualClock, tmp_path: Path) -> None:
    _, aws = _clients(clock, without("CompareOfferingsAndPrices", tmp_path))
    code, message, _ = _refusal(aws.pricing.get_products, ServiceCode="AmazonEC2", MaxResults=1)
    assert code == "AccessDeniedException"
    assert "pricing:GetProducts on resource: *" in message
