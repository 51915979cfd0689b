"""SageMaker hosting in the sandbox: models, endpoint configurations, endpoints and
inference components, with states that follow the clock and AWS's rules for endpoints on
training plans and MIG partitions.

The store is insert-only, so a resource's life is two records: the resource under
`REGION/NAME#GENERATION`, and a deletion under the same key in the `deleted` kind. A name
becomes free again once its deletion has finished; the next resource of that name is the
next generation. Creation and deletion are each one atomic insert, so two racing creates
of one name make one resource, as on AWS.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, sagemaker_invalid
from aws_sandbox.mig import driver_too_old, layout_problem
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import Record
from aws_sandbox.training_plans import TrainingPlans
from aws_sandbox.world import InstanceSpec

MODEL, CONFIG, ENDPOINT, COMPONENT = "model", "endpoint-config", "endpoint", "inference-component"
_NOUN = {
    MODEL: "model",
    CONFIG: "endpoint configuration",
    ENDPOINT: "endpoint",
    COMPONENT: "inference component",
}
_ARN_KIND = {
    MODEL: "model",
    CONFIG: "endpoint-config",
    ENDPOINT: "endpoint",
    COMPONENT: "inference-component",
}


# Models every sandbox region starts with, so `/gpu deploy` has something to place: a
# SageMaker model is only a name, an image and a role here.
DEMO_MODELS = ("llama-3-8b", "mistral-7b", "bge-embed", "rerank-v2")
DEMO_ROLE = "arn:aws:iam::{account}:role/gpu-bot-sagemaker"
DEMO_IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"


@dataclass(frozen=True)
class HostingTimes:
    """How long things take on the sandbox clock (AWS's are minutes too)."""

    endpoint_create: timedelta = timedelta(minutes=6)
    partitioning: timedelta = timedelta(seconds=17)  # the source article's measurement
    endpoint_delete: timedelta = timedelta(minutes=2)
    component_create: timedelta = timedelta(minutes=3)
    component_delete: timedelta = timedelta(minutes=1)


@dataclass(frozen=True)
class _Live:
    record: Record
    key: str
    deleting_since: datetime | None


class Hosting:
    def __init__(
        self,
        parts: MarketParts,
        times: HostingTimes | None = None,
        models: Sequence[str] = DEMO_MODELS,
    ) -> None:
        self._m = parts
        self._times = times or HostingTimes()
        self._plans = TrainingPlans(parts)
        self._demo_models = tuple(models)
        self._seeded: set[str] = set()

    def routes(self) -> dict[str, Callable[[Mapping[str, Any], str], dict[str, Any]]]:
        routes = {
            "CreateModel": self.create_model,
            "DescribeModel": self.describe_model,
            "ListModels": self.list_models,
            "DeleteModel": self.delete_model,
            "CreateEndpointConfig": self.create_config,
            "DescribeEndpointConfig": self.describe_config,
            "ListEndpointConfigs": self.list_configs,
            "DeleteEndpointConfig": self.delete_config,
            "CreateEndpoint": self.create_endpoint,
            "DescribeEndpoint": self.describe_endpoint,
            "ListEndpoints": self.list_endpoints,
            "DeleteEndpoint": self.delete_endpoint,
            "CreateInferenceComponent": self.create_component,
            "DescribeInferenceComponent": self.describe_component,
            "ListInferenceComponents": self.list_components,
            "DeleteInferenceComponent": self.delete_component,
            "ListTags": self.list_tags,
        }
        return {op: self._seeding(answer) for op, answer in routes.items()}

    def _seeding(
        self, answer: Callable[[Mapping[str, Any], str], dict[str, Any]]
    ) -> Callable[[Mapping[str, Any], str], dict[str, Any]]:
        def seeded(params: Mapping[str, Any], region: str) -> dict[str, Any]:
            if region not in self._seeded:
                self._seeded.add(region)
                for name in self._demo_models:
                    # generation 0 only: a demo model deleted stays deleted
                    record = self._new(MODEL, region, name, {}) | {
                        "role": DEMO_ROLE.format(account=self._m.account_id),
                        "image": DEMO_IMAGE.format(region=region),
                    }
                    key = _key(region, name, 0)
                    self._m.store.add(MODEL, key, record | {"key": key})
            return answer(params, region)

        return seeded

    # --- models -------------------------------------------------------------------------

    def create_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["ModelName"])
        record = self._new(MODEL, region, name, params) | {
            "role": params.get("ExecutionRoleArn"),
            "image": (params.get("PrimaryContainer") or {}).get("Image"),
        }
        self._insert(MODEL, region, name, record)
        return {"ModelArn": record["arn"]}

    def describe_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        r = self._get(MODEL, region, str(params["ModelName"])).record
        out = {"ModelName": r["name"], "ModelArn": r["arn"], "CreationTime": _at(r["created"])}
        if r.get("role"):
            out["ExecutionRoleArn"] = r["role"]
        if r.get("image"):
            out["PrimaryContainer"] = {"Image": r["image"]}
        return out

    def list_models(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = [
            {
                "ModelName": live.record["name"],
                "ModelArn": live.record["arn"],
                "CreationTime": _at(live.record["created"]),
            }
            for live in self._all(MODEL, region)
        ]
        return self._page(rows, params, "Models", "ModelName")

    def delete_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        self._delete(MODEL, region, str(params["ModelName"]))
        return {}

    # --- endpoint configurations -------------------------------------------------------

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
            "CreationTime": _at(r["created"]),
        }
        if r.get("role"):
            out["ExecutionRoleArn"] = r["role"]
        return out

    def list_configs(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = [
            {
                "EndpointConfigName": live.record["name"],
                "EndpointConfigArn": live.record["arn"],
                "CreationTime": _at(live.record["created"]),
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

    # --- endpoints -----------------------------------------------------------------------

    def create_endpoint(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["EndpointName"])
        config_name = str(params["EndpointConfigName"])
        config = self._find(CONFIG, region, config_name)
        if config is None:
            raise sagemaker_invalid(f'Could not find endpoint configuration "{config_name}".')
        existing = self._find(ENDPOINT, region, name)
        if existing is not None:
            raise _exists(ENDPOINT, existing.record["arn"])
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
            "failure": _provisioning_failure(variants, self._instance),
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
            "CreationTime": _at(r["created"]),
            "LastModifiedTime": _at(r["created"]),
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

    def _endpoint_status(self, live: _Live, region: str) -> tuple[str, str | None]:
        r = live.record
        now = self._m.clock.now()
        if live.deleting_since is not None:
            return "Deleting", None
        if now < _at(r["ready"]):
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
                    "CreationTime": _at(r["created"]),
                    "LastModifiedTime": _at(r["created"]),
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

    # --- inference components --------------------------------------------------------------

    def create_component(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["InferenceComponentName"])
        endpoint_name = str(params["EndpointName"])
        endpoint = self._find(ENDPOINT, region, endpoint_name)
        if endpoint is None:
            raise sagemaker_invalid(f'Could not find endpoint "{endpoint_name}".')
        status, _ = self._endpoint_status(endpoint, region)
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

    def _component_summary(self, live: _Live, region: str, *, full: bool) -> dict[str, Any]:
        r = live.record
        status = self._component_status(live, region)
        out: dict[str, Any] = {
            "InferenceComponentName": r["name"],
            "InferenceComponentArn": r["arn"],
            "EndpointName": r["endpoint"],
            "EndpointArn": r["endpoint_arn"],
            "VariantName": r["variant"],
            "InferenceComponentStatus": status,
            "CreationTime": _at(r["created"]),
            "LastModifiedTime": _at(r["created"]),
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

    def _component_status(self, live: _Live, region: str) -> str:
        if live.deleting_since is not None:
            return "Deleting"
        if self._m.clock.now() < _at(live.record["ready"]):
            return "Creating"
        endpoint = self._find(ENDPOINT, region, live.record["endpoint"])
        if endpoint is None or self._endpoint_status(endpoint, region)[0] != "InService":
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

    # --- placed by hand (tests, the shell) ---------------------------------------------------

    def place_endpoint(
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

    # --- tags ------------------------------------------------------------------------------

    def list_tags(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        arn = str(params["ResourceArn"])
        kind, _, name = arn.rpartition(":")[2].partition("/")
        by_arn_kind = {v: k for k, v in _ARN_KIND.items()}
        live = self._find(by_arn_kind[kind], region, name) if kind in by_arn_kind else None
        if live is None or live.record["arn"] != arn:
            raise sagemaker_invalid(f"Resource {arn} does not exist.")
        return {"Tags": live.record["tags"]}

    # --- the store -------------------------------------------------------------------------

    def _new(self, kind: str, region: str, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        arn = f"arn:aws:sagemaker:{region}:{self._m.account_id}:{_ARN_KIND[kind]}/{name.lower()}"
        return {
            "name": name,
            "arn": arn,
            "region": region,
            "created": self._m.clock.now().isoformat(),
            "tags": [dict(t) for t in params.get("Tags", [])],
        }

    def _insert(self, kind: str, region: str, name: str, record: Record) -> None:
        for generation in itertools.count():
            key = _key(region, name, generation)
            if self._m.store.get(kind, key) is None:
                if not self._m.store.add(kind, key, record | {"key": key}):
                    break  # another create of this name won the race
                return
            if self._live(kind, key) is not None:
                break
        raise _exists(kind, record["arn"])

    def _live(self, kind: str, key: str) -> _Live | None:
        """The resource under `key` unless its deletion has finished."""
        record = self._m.store.get(kind, key)
        if record is None:
            return None
        deletion = self._m.store.get(_deleted(kind), key)
        if deletion is None:
            return _Live(record, key, None)
        since = _at(deletion["at"])
        if self._m.clock.now() >= since + self._delete_time(kind):
            return None
        return _Live(record, key, since)

    def _find(self, kind: str, region: str, name: str) -> _Live | None:
        # SageMaker names are case-insensitive: "Llama" and "llama" are one model.
        for generation in itertools.count():
            key = _key(region, name, generation)
            if self._m.store.get(kind, key) is None:
                return None
            if (live := self._live(kind, key)) is not None:
                return live
        raise AssertionError("unreachable")

    def _get(self, kind: str, region: str, name: str) -> _Live:
        live = self._find(kind, region, name)
        if live is None:
            raise sagemaker_invalid(f'Could not find {_NOUN[kind]} "{name}".')
        return live

    def _all(self, kind: str, region: str) -> list[_Live]:
        return [
            live
            for record in self._m.store.records(kind)
            if record["region"] == region and (live := self._live(kind, record["key"]))
        ]

    def _delete(self, kind: str, region: str, name: str, live: _Live | None = None) -> None:
        live = live or self._get(kind, region, name)
        if live.deleting_since is not None or not self._m.store.add(
            _deleted(kind), live.key, {"at": self._m.clock.now().isoformat()}
        ):
            raise sagemaker_invalid(f"{_NOUN[kind].capitalize()} {name} is already being deleted.")

    def _delete_time(self, kind: str) -> timedelta:
        if kind == ENDPOINT:
            return self._times.endpoint_delete
        if kind == COMPONENT:
            return self._times.component_delete
        return timedelta(0)

    def _plan(self, arn: str, region: str) -> dict[str, Any] | None:
        try:
            return self._plans.describe({"TrainingPlanName": arn}, region)
        except SandboxError:
            return None

    def _instance(self, name: object) -> InstanceSpec | None:
        return self._m.world.spec(name)

    def _page(
        self, rows: list[dict[str, Any]], params: Mapping[str, Any], key: str, name_key: str
    ) -> dict[str, Any]:
        if params.get("NameContains"):
            needle = str(params["NameContains"]).lower()
            rows = [r for r in rows if needle in r[name_key].lower()]
        by_name = params.get("SortBy") == "Name"
        rows.sort(
            key=lambda r: (r[name_key] if by_name else r["CreationTime"], r[name_key]),
            reverse=params.get("SortOrder", "Descending") == "Descending",
        )
        page, token = paginate(
            rows, params, lambda t: sagemaker_invalid(f"Invalid pagination token: {t}"), 10
        )
        response: dict[str, Any] = {key: page}
        if token:
            response["NextToken"] = token
        return response


def _provisioning_failure(
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


def _key(region: str, name: str, generation: int) -> str:
    return f"{region}/{name.lower()}#{generation}"


def _deleted(kind: str) -> str:
    return f"{kind}-deleted"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _exists(kind: str, arn: str) -> SandboxError:
    return sagemaker_invalid(f'Cannot create already existing {_NOUN[kind]} "{arn}".')
