"""Each Describe* takes only the filter names its API reference page lists: a tag filter
that works on DescribeInstances is refused where the page lists none, as EC2 refuses it
(InvalidParameterValue); ListTrainingPlans takes only `Status` (ValidationException)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients

TAG = "tag:gpu-bot:request-id"


def error_of(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    err = exc.value.response["Error"]
    return str(err["Code"]), str(err["Message"])


def launch(ec2: Any, request_id: str) -> str:
    answer = ec2.run_instances(
        ImageId="ami-0123456789abcdef0",
        InstanceType="p5.48xlarge",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [{"Key": "gpu-bot:request-id", "Value": request_id}],
            }
        ],
    )
    return str(answer["Instances"][0]["InstanceId"])


def test_describe_instances_documents_tag_filters(market: SandboxMarket) -> None:
    ec2 = sandbox_clients(market, "us-east-1").ec2
    ours, _ = launch(ec2, "R1"), launch(ec2, "R2")
    for filters in (
        [{"Name": TAG, "Values": ["R1"]}],
        [{"Name": "tag-key", "Values": ["gpu-bot:request-id"]}, {"Name": TAG, "Values": ["R1"]}],
    ):
        found = ec2.describe_instances(Filters=filters)["Reservations"]
        assert [i["InstanceId"] for r in found for i in r["Instances"]] == [ours]
    with pytest.raises(ClientError) as exc:  # its page lists no tag-value
        ec2.describe_instances(Filters=[{"Name": "tag-value", "Values": ["R1"]}])
    assert error_of(exc) == ("InvalidParameterValue", "The filter 'tag-value' is invalid")


@pytest.mark.parametrize(
    ("operation", "params"),
    [
        ("describe_capacity_reservations", {}),
        ("describe_capacity_blocks", {}),
        ("describe_availability_zones", {}),
        ("describe_instance_type_offerings", {"LocationType": "region"}),
        ("describe_spot_price_history", {"InstanceTypes": ["p5.48xlarge"]}),
    ],
)
def test_a_tag_filter_is_refused_where_the_page_lists_none(
    market: SandboxMarket, operation: str, params: dict[str, Any]
) -> None:
    ec2 = sandbox_clients(market, "us-east-1").ec2
    with pytest.raises(ClientError) as exc:
        getattr(ec2, operation)(Filters=[{"Name": TAG, "Values": ["R1"]}], **params)
    assert error_of(exc) == ("InvalidParameterValue", f"The filter '{TAG}' is invalid")


def test_list_training_plans_takes_only_a_status_filter(market: SandboxMarket) -> None:
    sm = sandbox_clients(market, "us-east-1").sagemaker
    assert (
        sm.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])[
            "TrainingPlanSummaries"
        ]
        == []
    )
    with pytest.raises(ClientError) as exc:
        sm.list_training_plans(Filters=[{"Name": "InstanceType", "Value": "ml.p5.48xlarge"}])
    code, message = error_of(exc)
    assert code == "ValidationException" and "enum value set: [Status]" in message
