"""What people leave running: instances (DescribeInstances, TerminateInstances) and
SageMaker endpoints with their configs and inference components (List/Describe/Delete).

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
from bot.adapters.aws.sandbox.parts import MarketParts
from bot.adapters.aws.sandbox.store import Record

INSTANCE = "instance"
ENDPOINT = "endpoint"
COMPONENT = "inference-component"
CONFIG = "endpoint-config"
DELETED = "deleted"


def _gone_key(kind: str, region: str, name: str) -> str:
    return f"{kind}/{region}/{name}"


class Leftovers:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

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
        now = self._m.clock.now().isoformat()
        record: Record = {
            "name": name,
            "region": region,
            "config": f"{name}-config",
            "plan": plan_arn,
            "type": instance_type,
            "created": now,
        }
        self._m.store.add(ENDPOINT, f"{region}/{name}", record)
        for n in range(components):
            component = {"name": f"{name}-ic-{n + 1}", "region": region, "endpoint": name}
            self._m.store.add(COMPONENT, f"{region}/{name}-ic-{n + 1}", component | {"at": now})

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

    # --- SageMaker -------------------------------------------------------------------------

    def list_endpoints(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return {"Endpoints": [self._endpoint_summary(r) for r in self._endpoints(region)]}

    def describe_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        record = self._endpoint(region, str(params["EndpointName"]))
        return self._endpoint_summary(record) | {
            "EndpointConfigName": record["config"],
            "ProductionVariants": [{"VariantName": "AllTraffic"}],
        }

    def describe_endpoint_config(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointConfigName"])
        found = [r for r in self._endpoints(region, configs=True) if r["config"] == name]
        if not found:
            raise _validation(f'Could not find endpoint configuration "{name}".')
        record = found[0]
        return {
            "EndpointConfigName": name,
            "EndpointConfigArn": self._arn("endpoint-config", region, name),
            "CreationTime": datetime.fromisoformat(record["created"]),
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "InstanceType": f"ml.{record['type']}",
                    "InitialInstanceCount": 1,
                    "CapacityReservationConfig": {
                        "CapacityReservationPreference": "capacity-reservations-only",
                        "MlReservationArn": record["plan"],
                    },
                }
            ],
        }

    def list_inference_components(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        wanted = params.get("EndpointNameEquals")
        components = [
            r
            for r in self._live(COMPONENT, region, "name")
            if wanted is None or r["endpoint"] == wanted
        ]
        return {
            "InferenceComponents": [
                {
                    "InferenceComponentName": c["name"],
                    "InferenceComponentArn": self._arn("inference-component", region, c["name"]),
                    "EndpointName": c["endpoint"],
                    "EndpointArn": self._arn("endpoint", region, c["endpoint"]),
                    "VariantName": "AllTraffic",
                    "CreationTime": datetime.fromisoformat(c["at"]),
                    "LastModifiedTime": datetime.fromisoformat(c["at"]),
                }
                for c in components
            ]
        }

    def delete_inference_component(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["InferenceComponentName"])
        if name not in {c["name"] for c in self._live(COMPONENT, region, "name")}:
            raise _validation(f'Could not find inference component "{name}".')
        self._delete(COMPONENT, region, name)
        return {}

    def delete_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointName"])
        self._endpoint(region, name)
        if any(c["endpoint"] == name for c in self._live(COMPONENT, region, "name")):
            raise _validation("Delete the endpoint's inference components first.")
        self._delete(ENDPOINT, region, name)
        return {}

    def delete_endpoint_config(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointConfigName"])
        if not any(r["config"] == name for r in self._endpoints(region, configs=True)):
            raise _validation(f'Could not find endpoint configuration "{name}".')
        self._delete(CONFIG, region, name)
        return {}

    # --- shared ----------------------------------------------------------------------------

    def _endpoints(self, region: str, configs: bool = False) -> list[Record]:
        """Live endpoints; with `configs`, every endpoint whose config is not deleted."""
        deleted = self._deleted()
        return [
            r
            for r in self._m.store.records(ENDPOINT)
            if r["region"] == region
            and (
                _gone_key(CONFIG, region, r["config"]) not in deleted
                if configs
                else _gone_key(ENDPOINT, region, r["name"]) not in deleted
            )
        ]

    def _endpoint(self, region: str, name: str) -> Record:
        for record in self._endpoints(region):
            if record["name"] == name:
                return record
        raise _validation(f'Could not find endpoint "{name}".')

    def _endpoint_summary(self, record: Record) -> dict[str, Any]:
        created = datetime.fromisoformat(record["created"])
        return {
            "EndpointName": record["name"],
            "EndpointArn": self._arn("endpoint", record["region"], record["name"]),
            "CreationTime": created,
            "LastModifiedTime": created,
            "EndpointStatus": "InService",
        }

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

    def _arn(self, kind: str, region: str, name: str) -> str:
        return f"arn:aws:sagemaker:{region}:{self._m.account_id}:{kind}/{name}"


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


def _validation(message: str) -> SandboxError:
    return SandboxError("ValidationException", message)
