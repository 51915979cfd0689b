"""An offering quoted in one process can be bought in another: the id carries it."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock

NOW = datetime(2026, 3, 2, 11, 30, tzinfo=UTC)

BUYER = """
import json, sys
from datetime import datetime
from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock

now, block_id, plan_id = sys.argv[1:4]
clients = sandbox_clients(SandboxMarket(ManualClock(datetime.fromisoformat(now))), "us-east-1")
reservation = clients.ec2.purchase_capacity_block(
    CapacityBlockOfferingId=block_id, InstancePlatform="Linux/UNIX"
)["CapacityReservation"]
clients.sagemaker.create_training_plan(
    TrainingPlanName="bought-elsewhere", TrainingPlanOfferingId=plan_id
)
plan = clients.sagemaker.describe_training_plan(TrainingPlanName="bought-elsewhere")
print(json.dumps({
    "type": reservation["InstanceType"],
    "zone": reservation["AvailabilityZone"],
    "start": reservation["StartDate"].isoformat(),
    "plan_fee": plan["UpfrontFee"],
    "plan_parts": len(plan["ReservedCapacitySummaries"]),
}))
"""


def test_offerings_quoted_here_are_bought_in_another_process() -> None:
    clients = sandbox_clients(SandboxMarket(ManualClock(NOW)), "us-east-1")
    block = clients.ec2.describe_capacity_block_offerings(
        InstanceType="p5en.48xlarge", InstanceCount=4, CapacityDurationHours=72
    )["CapacityBlockOfferings"][2]
    plan = clients.sagemaker.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge",
        InstanceCount=2,
        DurationHours=20 * 24,
        TargetResources=["endpoint"],
    )["TrainingPlanOfferings"][0]
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            BUYER,
            NOW.isoformat(),
            block["CapacityBlockOfferingId"],
            plan["TrainingPlanOfferingId"],
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    bought = json.loads(out.stdout)
    assert bought == {
        "type": "p5en.48xlarge",
        "zone": block["AvailabilityZone"],
        "start": block["StartDate"].isoformat(),
        "plan_fee": plan["UpfrontFee"],
        "plan_parts": 2,
    }
