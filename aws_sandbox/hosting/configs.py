"""SageMaker endpoint configurations in the sandbox, with AWS's rules for a production
variant: inference components need an execution role; MIG partition layouts only for
endpoints built from inference components, one layout a variant, profiles that exist on
the GPU and fit together (aws_sandbox/mig.py); a training plan that targets endpoints and
reserves the variant's instance type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_sandbox.errors import sagemaker_invalid
from aws_sandbox.hosting.resources import CONFIG, MODEL, Resources, at
from aws_sandbox.mig import layout_problem
from aws_sandbox.world import InstanceSpec


class EndpointConfigs(Resources):
    def create_config(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointConfigName"])
        variants = list(params["ProductionVariants"])
        for variant in variants:
            self._check_variant(variant, params, region)
        record = self._new(CONFIG, region, name, params) | {
            "variants": [dict(v) for v in variants],
            "role": params.get("ExecutionRoleArn"),
        }
        self._insert(CONFIG, region, name, record)
        return {"EndpointConfigArn": record["arn"]}

    def describe_config(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        r = self._get(CONFIG, region, str(params["EndpointConfigName"])).record
        out = {
            "EndpointConfigName": r["name"],
            "EndpointConfigArn": r["arn"],
            "ProductionVariants": r["variants"],
            "CreationTime": at(r["created"]),
        }
        if r.get("role"):
            out["ExecutionRoleArn"] = r["role"]
        return out

    def list_configs(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = [
            {
                "EndpointConfigName": live.record["name"],
                "EndpointConfigArn": live.record["arn"],
                "CreationTime": at(live.record["created"]),
            }
            for live in self._all(CONFIG, region)
        ]
        return self._page(rows, params, "EndpointConfigs", "EndpointConfigName")

    def delete_config(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        self._delete(CONFIG, region, str(params["EndpointConfigName"]))
        return {}

    def _check_variant(
        self, variant: Mapping[str, Any], params: Mapping[str, Any], region: str
    ) -> None:
        name = variant["VariantName"]
        instance = self._instance(variant.get("InstanceType"))
        layouts = variant.get("AcceleratorPartitionLayouts") or []
        if variant.get("ModelName") is None and not params.get("ExecutionRoleArn"):
            raise sagemaker_invalid(
                f"Variant {name} names no model, so it hosts inference components: the "
                "endpoint configuration needs an ExecutionRoleArn."
            )
        if variant.get("ModelName") and not self._find(MODEL, region, variant["ModelName"]):
            raise sagemaker_invalid(f'Could not find model "{variant["ModelName"]}".')
        if layouts:
            self._check_layouts(variant, instance, layouts)
        reservation = variant.get("CapacityReservationConfig")
        if reservation and reservation.get("MlReservationArn"):
            self._check_reservation(variant, instance, reservation["MlReservationArn"], region)

    def _check_layouts(
        self, variant: Mapping[str, Any], instance: InstanceSpec | None, layouts: list[Any]
    ) -> None:
        name = variant["VariantName"]
        if variant.get("ModelName"):
            raise sagemaker_invalid(
                f"Variant {name}: AcceleratorPartitionLayouts are only for endpoints built "
                "from inference components (a variant without ModelName)."
            )
        if variant.get("ServerlessConfig") or variant.get("InstancePools"):
            raise sagemaker_invalid(
                f"Variant {name}: serverless variants and instance pools cannot use "
                "AcceleratorPartitionLayouts."
            )
        if len(layouts) != 1:
            raise sagemaker_invalid(
                f"Variant {name}: give exactly one accelerator partition layout; it applies "
                "to every accelerator of the instance."
            )
        if instance is None or instance.gpu is None:
            raise sagemaker_invalid(f"Variant {name}: this instance type has no MIG partitions.")
        # A driver too old for a profile is not refused here: the endpoint fails later,
        # with a reason that does not name the profile (the source article's P4d story).
        problem = layout_problem(instance.gpu, layouts[0]["AcceleratorPartitionTypes"])
        if problem is not None:
            raise sagemaker_invalid(f"Variant {name}: {problem}.")

    def _check_reservation(
        self, variant: Mapping[str, Any], instance: InstanceSpec | None, arn: str, region: str
    ) -> None:
        plan = self._plan(arn, region)
        if plan is None:
            raise sagemaker_invalid(f"Training plan {arn} does not exist.")
        if "endpoint" not in plan["TargetResources"]:
            raise sagemaker_invalid(
                f"Training plan {arn} does not reserve capacity for endpoints "
                f"(TargetResources: {', '.join(plan['TargetResources'])})."
            )
        reserved = plan["ReservedCapacitySummaries"][0]["InstanceType"]
        if instance is None or reserved != instance.sagemaker_name:
            raise sagemaker_invalid(
                f"Variant {variant['VariantName']} has instance type "
                f"{variant.get('InstanceType')}, but training plan {arn} reserves {reserved}."
            )
