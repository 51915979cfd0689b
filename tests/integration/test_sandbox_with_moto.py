"""The sandbox answers only its own operations: everything else on the same clients still
goes to whatever would answer it otherwise, here moto."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from moto import mock_aws

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock

NOW = datetime(2026, 3, 2, 11, 30, tzinfo=UTC)


@pytest.fixture
def moto() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.mark.usefixtures("moto")
def test_unknown_operations_are_left_to_moto() -> None:
    clients = sandbox_clients(SandboxMarket(ManualClock(NOW)), "us-east-1")
    (info,) = clients.ec2.describe_instance_types(InstanceTypes=["p5.48xlarge"])["InstanceTypes"]
    assert info["GpuInfo"]["Gpus"][0]["Count"] == 8  # moto's real instance data
    offerings = clients.ec2.describe_capacity_block_offerings(
        InstanceType="p5.48xlarge", InstanceCount=1, CapacityDurationHours=24
    )["CapacityBlockOfferings"]
    assert offerings  # moto has no Capacity Blocks: the sandbox answered
    clients.sagemaker.create_model(
        ModelName="m",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/sagemaker",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/m:1"},
    )
    assert clients.sagemaker.describe_model(ModelName="m")["ModelName"] == "m"


@pytest.mark.usefixtures("moto")
def test_the_sandbox_answers_before_moto_for_its_operations() -> None:
    # moto answers DescribeSpotPriceHistory with a fake constant price; the sandbox's
    # answer (catalog-based, one entry per zone) wins on an installed client.
    clients = sandbox_clients(SandboxMarket(ManualClock(NOW)), "us-east-1")
    history = clients.ec2.describe_spot_price_history(
        InstanceTypes=["p5.48xlarge"], ProductDescriptions=["Linux/UNIX"]
    )["SpotPriceHistory"]
    assert len(history) == 6
    assert len({e["SpotPrice"] for e in history}) > 1
