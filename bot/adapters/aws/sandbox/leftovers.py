"""What people leave running: instances (DescribeInstances, TerminateInstances), and
SageMaker endpoints placed on the hosting desk (bot/adapters/aws/sandbox/hosting.py).

The sandbox launches nothing itself; tests and the shell place resources with
`place_instance` / `place_endpoint`, as a person would have launched them. The market
store is insert-only, so a deletion is a record of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.adapters.aws.sandbox.errors import SandboxError
from bot.adapters.aws.sandbox.hosting import Hosting
from bot.adapters.aws.sandbox.parts import MarketParts
from bot.adapters.aws.sandbox.store import Record

INSTANCE = "instance"
DELETED = "deleted"


def _gone_key(kind: str, region: str, name: str) -> str:
    return f"{kind}/{region}/{name}"


class Leftovers:
    def __init__(self, parts: MarketParts, hosting: Hosting) -> None:
        self._m = parts
        self._hosting = hosting

    # --- placing (tests, shell) ----------------------------------------------------------

    def place_instance(
        self,
        region: str,
        instance_type: str,
        tags: Mapping[str, str] = (),  # type: ignore[assignment]
        reservation_id: str | None = None,
    ) -> str:
        instance_id = f"i-{uuid.uuid4().hex[:17]}"
        record: Record = {
            "id": instance_id,
            "region": region,
            "type": instance_type,
            "tags": [{"Key": k, "Value": v} for k, v in dict(tags).items()],
            "reservation": reservation_id,
            "launched": self._m.clock.now().isoformat(),
        }
        self._m.store.add(INSTANCE, instance_id, record)
        return instance_id

    def place_endpoint(
        self, region: str, name: str, plan_arn: str, instance_type: str, components: int = 0
    ) -> None:
        """An endpoint on `plan_arn`, its config `NAME-config` and `components` inference
        components, already in service (the hosting desk answers for them)."""
        self._hosting.place_endpoint(region, name, plan_arn, instance_type, components)

    def list_endpoints(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return self._hosting.list_endpoints(params, region)

    # --- EC2 -------------------------------------------------------------------------------

    def describe_instances(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        instances = [self._instance(r) for r in self._live(INSTANCE, region, "id")]
        for spec in params.get("Filters", []):
            name, values = spec["Name"], set(spec.get("Values", []))
            instances = [i for i in instances if _matches(i, name, values)]
        if ids := params.get("InstanceIds"):
            instances = [i for i in instances if i["InstanceId"] in ids]
        reservations = [
            {"ReservationId": f"r-{i['InstanceId'][2:]}", "OwnerId": self._m.account_id,
             "Instances": [i]}
            for i in instances
        ]  # fmt: skip
        return {"Reservations": reservations}

    def terminate_instances(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        live = {r["id"] for r in self._live(INSTANCE, region, "id")}
        changes = []
        for instance_id in params["InstanceIds"]:
            if instance_id not in live:
                raise SandboxError(
                    "InvalidInstanceID.NotFound",
                    f"The instance ID '{instance_id}' does not exist",
                )
            self._delete(INSTANCE, region, instance_id)
            changes.append(
                {
                    "InstanceId": instance_id,
                    "CurrentState": {"Code": 32, "Name": "shutting-down"},
                    "PreviousState": {"Code": 16, "Name": "running"},
                }
            )
        return {"TerminatingInstances": changes}

    def _instance(self, record: Record) -> dict[str, Any]:
        instance = {
            "InstanceId": record["id"],
            "InstanceType": record["type"],
            "State": {"Code": 16, "Name": "running"},
            "LaunchTime": datetime.fromisoformat(record["launched"]),
            "Tags": record["tags"],
        }
        if record["reservation"]:
            instance["CapacityReservationId"] = record["reservation"]
        return instance

    # --- shared ----------------------------------------------------------------------------

    def _live(self, kind: str, region: str, id_field: str) -> list[Record]:
        deleted = self._deleted()
        return [
            r
            for r in self._m.store.records(kind)
            if r["region"] == region and _gone_key(kind, region, r[id_field]) not in deleted
        ]

    def _deleted(self) -> set[str]:
        return {r["key"] for r in self._m.store.records(DELETED)}

    def _delete(self, kind: str, region: str, name: str) -> None:
        key = _gone_key(kind, region, name)
        self._m.store.add(DELETED, key, {"key": key})


def _matches(instance: dict[str, Any], name: str, values: set[str]) -> bool:
    if name.startswith("tag:"):
        key = name[4:]
        return any(t["Key"] == key and t["Value"] in values for t in instance["Tags"])
    if name == "instance-state-name":
        return bool(instance["State"]["Name"] in values)
    if name == "capacity-reservation-id":
        return instance.get("CapacityReservationId") in values
    if name == "instance-type":
        return bool(instance["InstanceType"] in values)
    raise SandboxError("InvalidParameterValue", f"The filter '{name}' is invalid")
