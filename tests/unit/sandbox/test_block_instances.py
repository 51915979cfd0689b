"""Instances in a Capacity Block: AWS terminates them 30 minutes before the block ends
(the sandbox's rule, cited in aws_sandbox/instances.py), through a real boto3 client."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aws_sandbox import SandboxMarket
from bot.adapters.clock import ManualClock
from tests.unit.sandbox.test_extensions import block_offers, bought_block

MIN = timedelta(minutes=1)


def launch(ec2: Any, reservation_id: str, market: str | None = "capacity-block") -> str:
    params: dict[str, Any] = {
        "InstanceType": "p5.48xlarge",
        "MinCount": 1,
        "MaxCount": 1,
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": reservation_id}
        },
    }
    if market:
        params["InstanceMarketOptions"] = {"MarketType": market}
    (made,) = ec2.run_instances(**params)["Instances"]
    return str(made["InstanceId"])


def states(ec2: Any) -> dict[str, str]:
    found = ec2.describe_instances()["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in found for i in r["Instances"]}


def test_instances_in_a_block_are_terminated_30_minutes_before_its_end(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    rid, end = reservation["CapacityReservationId"], reservation["EndDate"]
    instance = launch(ec2, rid)
    elsewhere = ec2.run_instances(InstanceType="p5.48xlarge", MinCount=1, MaxCount=1)
    on_demand = elsewhere["Instances"][0]["InstanceId"]
    clock.set(end - 30 * MIN - timedelta(seconds=1))
    assert states(ec2) == {instance: "running", on_demand: "running"}
    clock.set(end - 30 * MIN)
    assert states(ec2) == {instance: "shutting-down", on_demand: "running"}
    running = ec2.describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )["Reservations"]
    assert [i["InstanceId"] for r in running for i in r["Instances"]] == [on_demand]
    clock.set(end)
    assert states(ec2)[instance] == "terminated"
    # Terminating it afterwards changes nothing: it is terminated already.
    (change,) = ec2.terminate_instances(InstanceIds=[instance])["TerminatingInstances"]
    assert change["PreviousState"]["Name"] == change["CurrentState"]["Name"] == "terminated"
    clock.set(end + timedelta(hours=1))  # listed for an hour after, then gone
    assert instance not in states(ec2)


def test_an_extension_moves_when_the_blocks_instances_are_terminated(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    rid, end = reservation["CapacityReservationId"], reservation["EndDate"]
    instance = launch(ec2, rid)
    [offer] = block_offers(ec2, rid, 24)
    ec2.purchase_capacity_block_extension(
        CapacityBlockExtensionOfferingId=offer["CapacityBlockExtensionOfferingId"],
        CapacityReservationId=rid,
    )
    clock.set(end)
    assert states(ec2)[instance] == "running"
    clock.set(offer["CapacityBlockExtensionEndDate"] - 30 * MIN)
    assert states(ec2)[instance] == "shutting-down"
