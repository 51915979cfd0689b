"""An instance's tags can change after it is launched (CreateTags), and the cleanup looks
at the tag again just before it terminates: an instance re-tagged for another request
between the look and the terminate is left running."""

from __future__ import annotations

import logging

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.aftercare import REQUEST_TAG, AwsAftercare
from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import default_catalog
from bot.domain.cleanup import LeftoverKind
from tests.factories import make_record
from tests.unit.sandbox.test_cleanup_gone import REGION, _OneAccount


@pytest.fixture
def aws(market: SandboxMarket) -> AwsClients:
    return sandbox_clients(market, REGION)


def _tags(aws: AwsClients, instance_id: str) -> dict[str, str]:
    (group,) = aws.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return {t["Key"]: t["Value"] for t in group["Instances"][0]["Tags"]}


def _state(aws: AwsClients, instance_id: str) -> str:
    (group,) = aws.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(group["Instances"][0]["State"]["Name"])


def _code(call: object, **params: object) -> str:
    with pytest.raises(ClientError) as info:
        call(**params)  # type: ignore[operator]
    return str(info.value.response["Error"]["Code"])


# --- CreateTags, as EC2 answers it -------------------------------------------------------


def test_create_tags_overwrites_the_keys_given_and_keeps_the_others(
    aws: AwsClients, market: SandboxMarket
) -> None:
    one = market.leftovers.place_instance(REGION, "p5.48xlarge", {REQUEST_TAG: "R1", "team": "ml"})
    aws.ec2.create_tags(Resources=[one], Tags=[{"Key": REQUEST_TAG, "Value": "R2"}])
    assert _tags(aws, one) == {REQUEST_TAG: "R2", "team": "ml"}
    aws.ec2.create_tags(Resources=[one], Tags=[{"Key": "owner", "Value": "U1"}])
    assert _tags(aws, one) == {REQUEST_TAG: "R2", "team": "ml", "owner": "U1"}
    found = aws.ec2.describe_instances(Filters=[{"Name": f"tag:{REQUEST_TAG}", "Values": ["R1"]}])
    assert found["Reservations"] == []  # the filters see the tags as they are now


def test_create_tags_refuses_what_ec2_refuses_and_changes_nothing(
    aws: AwsClients, market: SandboxMarket
) -> None:
    one = market.leftovers.place_instance(REGION, "p5.48xlarge", {REQUEST_TAG: "R1"})
    key = [{"Key": REQUEST_TAG, "Value": "R2"}]
    assert _code(aws.ec2.create_tags, Resources=["i-0000000000000000f"], Tags=key) == (
        "InvalidInstanceID.NotFound"
    )
    assert _code(aws.ec2.create_tags, Resources=[one], Tags=[{"Key": "aws:x", "Value": "y"}]) == (
        "InvalidParameterValue"
    )
    many = [{"Key": f"k{n}", "Value": "v"} for n in range(50)]  # 51 with the one it has
    assert _code(aws.ec2.create_tags, Resources=[one], Tags=many) == "TagLimitExceeded"
    assert _code(aws.ec2.create_tags, Resources=[one], Tags=key, DryRun=True) == "DryRunOperation"
    assert _tags(aws, one) == {REQUEST_TAG: "R1"}


# --- the cleanup's second look --------------------------------------------------------------


def test_an_instance_re_tagged_between_the_look_and_the_terminate_is_left_running(
    aws: AwsClients, market: SandboxMarket, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    kept = market.leftovers.place_instance(REGION, "p5.48xlarge", {REQUEST_TAG: "R1"})
    gone = market.leftovers.place_instance(REGION, "p5.48xlarge", {REQUEST_TAG: "R1"})
    aftercare = AwsAftercare(_OneAccount(aws), default_catalog(), clock)  # type: ignore[arg-type]
    record = make_record("R1")
    found = aftercare.find(record).items
    assert {(i.kind, i.id, i.ours) for i in found} == {
        (LeftoverKind.INSTANCE, kept, True),
        (LeftoverKind.INSTANCE, gone, True),
    }
    # Someone takes one of them over for their own request after the prompt looked.
    aws.ec2.create_tags(Resources=[kept], Tags=[{"Key": REQUEST_TAG, "Value": "R2"}])
    with caplog.at_level(logging.WARNING, logger="bot.adapters.aws.aftercare"):
        aftercare.delete(record, found)
    assert _state(aws, kept) == "running"
    assert _state(aws, gone) == "shutting-down"
    assert f"{kept} is not tagged for R1: left alone" in caplog.text
