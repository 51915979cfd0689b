"""SageMaker endpoints in the sandbox: created from a configuration, Creating then
InService on the sandbox clock (partitioning takes longer), OutOfService once their
training plan is no longer active; an endpoint on a plan takes the plan's instances."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aws_sandbox.errors import SandboxError, sagemaker_invalid
from aws_sandbox.hosting.resources import (
    COMPONENT,
    CONFIG,
    ENDPOINT,
    Live,
    Resources,
    at,
    exists,
)
from aws_sandbox.mig import driver_too_old
from aws_sandbox.world import InstanceSpec


class Endpoints(Resources):
    def create_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointName"])
        config_name = str(params["EndpointConfigName"])
        config = self._find(CONFIG, region, config_name)
        if config is None:
            raise sagemaker_invalid(f'Could not find endpoint configuration "{config_name}".')
        existing = self._find(ENDPOINT, region, name)
        if existing is not None:
            raise exists(ENDPOINT, existing.record["arn"])
        variants = config.record["variants"]
        for variant in variants:
            self._check_capacity(name, variant, region)
        partitioned = any(v.get("AcceleratorPartitionLayouts") for v in variants)
        ready = self._m.clock.now() + self._times.endpoint_create
        if partitioned:
            ready += self._times.partitioning
        record = self._new(ENDPOINT, region, name, params) | {
            "config": config_name,
            "variants": variants,
            "ready": ready.isoformat(),
            "failure": provisioning_failure(variants, self._instance),
        }
        self._insert(ENDPOINT, region, name, record)
        return {"EndpointArn": record["arn"]}

    def _check_capacity(self, endpoint: str, variant: Mapping[str, Any], region: str) -> None:
        reservation = variant.get("CapacityReservationConfig") or {}
        arn = reservation.get("MlReservationArn")
        if not arn:
            return
        plan = self._plan(arn, region)
        if plan is None:
            raise sagemaker_invalid(f"Training plan {arn} does not exist.")
        if plan["Status"] != "Active":
            raise sagemaker_invalid(
                f"Training plan {arn} is {plan['Status']}; an endpoint can use only an "
                "Active training plan."
            )
        used = sum(
            v["InitialInstanceCount"]
            for live in self._all(ENDPOINT, region)
            if live.record["name"] != endpoint and live.deleting_since is None
            for v in live.record["variants"]
            if (v.get("CapacityReservationConfig") or {}).get("MlReservationArn") == arn
        )
        wanted = int(variant.get("InitialInstanceCount") or 0)
        if used + wanted > plan["TotalInstanceCount"]:
            raise SandboxError(
                "ResourceLimitExceeded",
                f"Training plan {arn} holds {plan['TotalInstanceCount']} instances, "
                f"{used} in use by other endpoints; variant {variant['VariantName']} asks "
                f"for {wanted}.",
            )

    def describe_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        live = self._get(ENDPOINT, region, str(params["EndpointName"]))
        r = live.record
        status, reason = self._endpoint_status(live, region)
        out: dict[str, Any] = {
            "EndpointName": r["name"],
            "EndpointArn": r["arn"],
            "EndpointConfigName": r["config"],
            "EndpointStatus": status,
            "CreationTime": at(r["created"]),
            "LastModifiedTime": at(r["created"]),
            "ProductionVariants": [
                {
                    "VariantName": v["VariantName"],
                    "CurrentInstanceCount": v["InitialInstanceCount"]
                    if status == "InService"
                    else 0,
                    "DesiredInstanceCount": v["InitialInstanceCount"],
                }
                for v in r["variants"]
            ],
        }
        if reason:
            out["FailureReason"] = reason
        return out

    def _endpoint_status(self, live: Live, region: str) -> tuple[str, str | None]:
        r = live.record
        now = self._m.clock.now()
        if live.deleting_since is not None:
            return "Deleting", None
        if now < at(r["ready"]):
            return "Creating", None
        if r.get("failure"):
            return "Failed", str(r["failure"])
        for v in r["variants"]:
            arn = (v.get("CapacityReservationConfig") or {}).get("MlReservationArn")
            plan = self._plan(arn, region) if arn else None
            if plan is not None and plan["Status"] != "Active":
                return "OutOfService", (
                    f"Training plan {arn} is {plan['Status']}: the endpoint has no capacity."
                )
        return "InService", None

    def list_endpoints(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = []
        for live in self._all(ENDPOINT, region):
            status, _ = self._endpoint_status(live, region)
            if params.get("StatusEquals") and params["StatusEquals"] != status:
                continue
            r = live.record
            rows.append(
                {
                    "EndpointName": r["name"],
                    "EndpointArn": r["arn"],
                    "EndpointStatus": status,
                    "CreationTime": at(r["created"]),
                    "LastModifiedTime": at(r["created"]),
                }
            )
        return self._page(rows, params, "Endpoints", "EndpointName")

    def delete_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointName"])
        live = self._get(ENDPOINT, region, name)
        components = [
            c
            for c in self._all(COMPONENT, region)
            if c.record["endpoint"] == name and c.deleting_since is None
        ]
        if components:
            raise sagemaker_invalid(
                f"Endpoint {name} has inference components "
                f"({', '.join(c.record['name'] for c in components)}): delete them first."
            )
        self._delete(ENDPOINT, region, name, live)
        return {}

    def status(self, live: Live, region: str) -> str:
        return self._endpoint_status(live, region)[0]

    def instances_on_plan(self, plan_arn: str, region: str) -> int:
        """Instances of endpoints in service on the plan (created, not failed, not being
        deleted): what the plan's in-use count reports."""
        now = self._m.clock.now()
        return sum(
            int(v.get("InitialInstanceCount") or 0)
            for live in self._all(ENDPOINT, region)
            if live.deleting_since is None
            and now >= at(live.record["ready"])
            and not live.record.get("failure")
            for v in live.record["variants"]
            if (v.get("CapacityReservationConfig") or {}).get("MlReservationArn") == plan_arn
        )

    def place(
        self,
        region: str,
        name: str,
        plan_arn: str,
        instance_type: str,
        components: int = 0,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """An endpoint launched outside the bot, already in service, with its config
        `NAME-config` and `components` inference components, each carrying `tags`: no
        rule is checked."""
        now = self._m.clock.now().isoformat()
        tagged = {"Tags": [{"Key": k, "Value": v} for k, v in dict(tags or {}).items()]}
        variant = {
            "VariantName": "AllTraffic",
            "InstanceType": f"ml.{instance_type.removeprefix('ml.')}",
            "InitialInstanceCount": 1,
            "CapacityReservationConfig": {
                "CapacityReservationPreference": "capacity-reservations-only",
                "MlReservationArn": plan_arn,
            },
        }
        config = f"{name}-config"
        self._insert(CONFIG, region, config, self._new(CONFIG, region, config, tagged) | {
            "variants": [variant], "role": None})  # fmt: skip
        self._insert(ENDPOINT, region, name, self._new(ENDPOINT, region, name, tagged) | {
            "config": config, "variants": [variant], "ready": now, "failure": None})  # fmt: skip
        endpoint_arn = self._find(ENDPOINT, region, name)
        assert endpoint_arn is not None
        for n in range(components):
            ic = f"{name}-ic-{n + 1}"
            self._insert(COMPONENT, region, ic, self._new(COMPONENT, region, ic, tagged) | {
                "endpoint": name, "endpoint_arn": endpoint_arn.record["arn"],
                "variant": "AllTraffic", "model": "placed", "copies": 1, "ready": now,
                "needs": {"MinMemoryRequiredInMb": 1024}})  # fmt: skip


def provisioning_failure(
    variants: list[dict[str, Any]], instance_of: Callable[[object], InstanceSpec | None]
) -> str | None:
    """Why an endpoint of these variants fails while provisioning, as AWS would say it:
    a MIG profile newer than the image's driver fails without naming the profile."""
    for v in variants:
        layouts = v.get("AcceleratorPartitionLayouts") or []
        instance = instance_of(v.get("InstanceType"))
        if not layouts or instance is None or instance.gpu is None:
            continue
        types = layouts[0]["AcceleratorPartitionTypes"]
        if driver_too_old(instance.gpu, types, v.get("InferenceAmiVersion")):
            return (
                "Unable to configure GPU partitions on the instance: the accelerator "
                "partition layout could not be applied."
            )
    return None
