"""SageMaker inference components in the sandbox: placed on an endpoint that is in
service, one copy per MIG partition of the endpoint's layout (or whole accelerators
without one), and no more copies than the endpoint has room for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_sandbox.errors import SandboxError, sagemaker_invalid
from aws_sandbox.hosting.endpoints import Endpoints
from aws_sandbox.hosting.resources import (
    COMPONENT,
    ENDPOINT,
    MODEL,
    HostingTimes,
    Live,
    Resources,
    at,
)
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import Record


class InferenceComponents(Resources):
    def __init__(self, parts: MarketParts, times: HostingTimes, endpoints: Endpoints) -> None:
        super().__init__(parts, times)
        self._endpoints = endpoints

    def create_component(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["InferenceComponentName"])
        endpoint_name = str(params["EndpointName"])
        endpoint = self._find(ENDPOINT, region, endpoint_name)
        if endpoint is None:
            raise sagemaker_invalid(f'Could not find endpoint "{endpoint_name}".')
        status = self._endpoints.status(endpoint, region)
        if status != "InService":
            raise sagemaker_invalid(
                f"Endpoint {endpoint_name} is {status}; inference components can be added "
                "only to an endpoint that is InService."
            )
        spec = params.get("Specification") or {}
        variant = self._variant(endpoint.record, params.get("VariantName"))
        model = spec.get("ModelName")
        if not model or self._find(MODEL, region, model) is None:
            raise sagemaker_invalid(f'Could not find model "{model}".')
        needs = spec.get("ComputeResourceRequirements") or {}
        self._check_room(
            name,
            needs,
            int((params.get("RuntimeConfig") or {}).get("CopyCount", 1)),
            endpoint.record,
            variant,
            region,
        )
        record = self._new(COMPONENT, region, name, params) | {
            "endpoint": endpoint_name,
            "endpoint_arn": endpoint.record["arn"],
            "variant": variant["VariantName"],
            "model": model,
            "needs": dict(needs),
            "copies": int((params.get("RuntimeConfig") or {}).get("CopyCount", 1)),
            "ready": (self._m.clock.now() + self._times.component_create).isoformat(),
        }
        self._insert(COMPONENT, region, name, record)
        return {"InferenceComponentArn": record["arn"]}

    def _variant(self, endpoint: Record, name: str | None) -> dict[str, Any]:
        for v in endpoint["variants"]:
            if name is None or v["VariantName"] == name:
                return dict(v)
        raise sagemaker_invalid(f"Endpoint {endpoint['name']} has no variant {name}.")

    def _check_room(
        self,
        name: str,
        needs: Mapping[str, Any],
        copies: int,
        endpoint: Record,
        variant: Mapping[str, Any],
        region: str,
    ) -> None:
        instance = self._instance(variant.get("InstanceType"))
        count = int(variant.get("InitialInstanceCount") or 1)
        layouts = variant.get("AcceleratorPartitionLayouts") or []
        partition = needs.get("AcceleratorPartitionType")
        devices = int(needs.get("NumberOfAcceleratorDevicesRequired") or 0)
        others = [
            c.record
            for c in self._all(COMPONENT, region)
            if c.record["endpoint"] == endpoint["name"] and c.record["name"] != name
        ]
        if layouts and instance is not None:
            if not partition:
                raise sagemaker_invalid(
                    f"Endpoint {endpoint['name']} has an accelerator partition layout: "
                    "ComputeResourceRequirements.AcceleratorPartitionType is required."
                )
            if devices != 1:
                raise sagemaker_invalid(
                    "NumberOfAcceleratorDevicesRequired must be 1 with an AcceleratorPartitionType."
                )
            types = layouts[0]["AcceleratorPartitionTypes"]
            if partition not in types:
                raise sagemaker_invalid(
                    f"AcceleratorPartitionType {partition} is not in the endpoint's layout "
                    f"({', '.join(types)})."
                )
            # One copy per partition; the layout is applied to every GPU of every instance.
            total = types.count(partition) * instance.accelerators * count
            taken = sum(
                c["copies"]
                for c in others
                if c["needs"].get("AcceleratorPartitionType") == partition
            )
            if taken + copies > total:
                raise SandboxError(
                    "ResourceLimitExceeded",
                    f"The endpoint has {total} {partition} partitions, {taken} in use; "
                    f"{copies} copies asked (one copy per partition).",
                )
            return
        if partition:
            raise sagemaker_invalid(
                f"Endpoint {endpoint['name']} has no accelerator partition layout: remove "
                "AcceleratorPartitionType."
            )
        if instance is not None and devices:
            total = instance.accelerators * count
            taken = sum(
                c["copies"] * int(c["needs"].get("NumberOfAcceleratorDevicesRequired") or 0)
                for c in others
            )
            if taken + copies * devices > total:
                raise SandboxError(
                    "ResourceLimitExceeded",
                    f"The endpoint has {total} accelerators, {taken} in use; {copies} copies "
                    f"of {devices} asked.",
                )

    def describe_component(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        live = self._get(COMPONENT, region, str(params["InferenceComponentName"]))
        return self._component_summary(live, region, full=True)

    def _component_summary(self, live: Live, region: str, *, full: bool) -> dict[str, Any]:
        r = live.record
        status = self._component_status(live, region)
        out: dict[str, Any] = {
            "InferenceComponentName": r["name"],
            "InferenceComponentArn": r["arn"],
            "EndpointName": r["endpoint"],
            "EndpointArn": r["endpoint_arn"],
            "VariantName": r["variant"],
            "InferenceComponentStatus": status,
            "CreationTime": at(r["created"]),
            "LastModifiedTime": at(r["created"]),
        }
        if full:
            out["Specification"] = {
                "ModelName": r["model"],
                "ComputeResourceRequirements": r["needs"],
            }
            out["RuntimeConfig"] = {
                "DesiredCopyCount": r["copies"],
                "CurrentCopyCount": r["copies"] if status == "InService" else 0,
            }
        return out

    def _component_status(self, live: Live, region: str) -> str:
        if live.deleting_since is not None:
            return "Deleting"
        if self._m.clock.now() < at(live.record["ready"]):
            return "Creating"
        endpoint = self._find(ENDPOINT, region, live.record["endpoint"])
        if endpoint is None or self._endpoints.status(endpoint, region) != "InService":
            return "Failed"
        return "InService"

    def list_components(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = [
            self._component_summary(live, region, full=False)
            for live in self._all(COMPONENT, region)
            if params.get("EndpointNameEquals") in (None, live.record["endpoint"])
        ]
        if params.get("StatusEquals"):
            rows = [r for r in rows if r["InferenceComponentStatus"] == params["StatusEquals"]]
        return self._page(rows, params, "InferenceComponents", "InferenceComponentName")

    def delete_component(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        self._delete(COMPONENT, region, str(params["InferenceComponentName"]))
        return {}
