"""`launch 4 into R1` and `stop 2 in R1`: instances in the sandbox, the way a user starts
them with the usage hint's command (RunInstances into the reservation, tagged with the
request; On-Demand or Spot tagged only), so that sampling, idle alerts, report cards and
the cleanup prompt can be seen moving with `clock`."""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from bot.adapters.aws.aftercare import REQUEST_TAG
from bot.app import Wiring
from bot.domain.comparison import OptionKind
from bot.domain.records import CapacityRecord
from bot.services.usage import round_job

LAUNCH = re.compile(r"^(\d{1,3})\s+into\s+(R\d+)$", re.IGNORECASE)
STOP = re.compile(r"^(\d{1,3})\s+in\s+(R\d+)$", re.IGNORECASE)
LAUNCH_USAGE = "Launch how many into which request? `launch 4 into R1` (1 to 999)."
STOP_USAGE = "Stop how many in which request? `stop 2 in R1` (1 to 999)."


class ShellInstances:
    def __init__(self, services: Wiring) -> None:
        self.services = services

    def _record(self, request_id: str) -> CapacityRecord | str:
        record = self.services.store.get(request_id.upper())
        return record if record is not None else f"There is no request {request_id.upper()}."

    def _ec2(self, record: CapacityRecord) -> Any:
        res = record.reservation
        account = res.account if res else record.request.account
        region = res.region if res else record.request.region
        return self.services.accounts.clients(account, region).ec2

    def sample_now(self) -> None:
        self.services.store.schedule(round_job(self.services.clock.now()))

    def launch(self, text: str) -> tuple[str, bool]:
        said = self._launch(text)
        return said, said.startswith("Launched")

    def _launch(self, text: str) -> str:
        match = LAUNCH.match(text.strip())
        if match is None or int(match.group(1)) < 1:
            return LAUNCH_USAGE
        count, found = int(match.group(1)), self._record(match.group(2))
        if isinstance(found, str):
            return found
        res = found.reservation
        if res is not None and res.kind is OptionKind.TRAINING_PLAN:
            return (
                f"{found.id} is a training plan: SageMaker runs its instances. Deploy an "
                "endpoint onto it (the Deploy button) and its instances count as used."
            )
        if res is None and found.choice is None:
            return f"{found.id} has nothing to launch into yet ({found.state.label})."
        params = _launch_params(found, count)
        try:
            made = self._ec2(found).run_instances(**params)
        except ClientError as error:
            err = error.response["Error"]
            return f"AWS refused: {err.get('Code')}: {err.get('Message')}"
        ids = [i["InstanceId"] for i in made.get("Instances", [])]
        kind = found.choice.kind.label if found.choice else "On-Demand"
        where = f"into {res.id}" if res is not None else f"as {kind}"
        made_here = f"Launched {len(ids)} x {params['InstanceType']} {where}"
        return f"{made_here}, tagged {REQUEST_TAG}={found.id}."

    def stop(self, text: str) -> tuple[str, bool]:
        said = self._stop(text)
        return said, said.startswith("Stopped")

    def _stop(self, text: str) -> str:
        match = STOP.match(text.strip())
        if match is None or int(match.group(1)) < 1:
            return STOP_USAGE
        count, found = int(match.group(1)), self._record(match.group(2))
        if isinstance(found, str):
            return found
        ec2 = self._ec2(found)
        listed = ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{REQUEST_TAG}", "Values": [found.id]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        ids = [i["InstanceId"] for r in listed.get("Reservations", []) for i in r["Instances"]]
        if not ids:
            return f"Nothing tagged {REQUEST_TAG}={found.id} is running."
        chosen = sorted(ids)[:count]
        ec2.terminate_instances(InstanceIds=chosen)
        left = len(ids) - len(chosen)
        return f"Stopped {len(chosen)} in {found.id}; {left} still running."


def _launch_params(record: CapacityRecord, count: int) -> dict[str, Any]:
    res = record.reservation
    instance_type = res.instance_type if res else record.request.instance_type
    tags = [{"Key": REQUEST_TAG, "Value": record.id}]
    params: dict[str, Any] = {
        "ImageId": "ami-0123456789abcdef0",
        "InstanceType": instance_type,
        "MinCount": count,
        "MaxCount": count,
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
    }
    if res is not None:
        target = {"CapacityReservationTarget": {"CapacityReservationId": res.id}}
        params["CapacityReservationSpecification"] = target
        if res.availability_zone:
            params["Placement"] = {"AvailabilityZone": res.availability_zone}
        if res.kind is OptionKind.CAPACITY_BLOCK:
            params["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    elif record.choice is not None and record.choice.kind is OptionKind.SPOT:
        params["InstanceMarketOptions"] = {"MarketType": "spot"}
    return params
