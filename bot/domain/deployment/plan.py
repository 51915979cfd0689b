"""What a deployment onto a training plan would send, or why it is refused.

`plan_deployment` turns a reserved plan, the models (memory need and copies each), an
instance count and an optional per-GPU MIG layout into the CreateEndpointConfig,
CreateEndpoint and CreateInferenceComponent parameters, checking every rule before any
AWS call. Without a layout the MIG planner picks one; an instance type without MIG
profiles (or `whole_gpus`) gives each copy whole GPUs instead.

Pure: the caller supplies what it knows of the plan and which names are taken.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bot.domain.catalog import Catalog, CatalogPrice, InstanceType, PriceKind
from bot.domain.deployment.rules import Refusal, Rule
from bot.domain.mig.layout import LayoutCheck, check_layout, read_layout
from bot.domain.mig.planner import IDLE, Assignment, ModelNeed, Share, chargeback, plan_layout
from bot.domain.mig.profiles import (
    FAMILIES,
    RECOMMENDED_AMI,
    GpuFamily,
    Profile,
    normalize_profile_name,
)
from bot.domain.words import counted

VARIANT = "AllTraffic"
RESERVATION_PREFERENCE = "capacity-reservations-only"
ENDPOINT_TARGET = "endpoint"  # a training plan's TargetResources value for endpoints
ACTIVE = "Active"  # DescribeTrainingPlan's Status of a plan whose window is open
# Host memory each copy reserves (MinMemoryRequiredInMb is required by the API); the GPU
# memory a copy needs is what its partition or its whole GPUs give it.
HOST_MEMORY_MB = 1024
_NAME_MAX = 63  # SageMaker EntityName: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}


@dataclass(frozen=True)
class ReservedPlan:
    """What is known of the training plan the endpoint runs on. Facts left as None are
    not checked here (`gpu-bot deploy plan --plan-arn` knows only the ARN)."""

    arn: str
    instance_type: str | None = None  # either spelling: p4d.24xlarge or ml.p4d.24xlarge
    instances: int | None = None
    status: str | None = None  # as DescribeTrainingPlan reports it
    target_resources: tuple[str, ...] | None = None
    start: datetime | None = None
    end: datetime | None = None
    fee_usd: float | None = None

    @property
    def reserved_usd_per_instance_hour(self) -> float | None:
        if None in (self.fee_usd, self.start, self.end, self.instances):
            return None
        assert self.fee_usd is not None and self.start and self.end and self.instances
        hours = (self.end - self.start).total_seconds() / 3600
        return None if hours <= 0 else self.fee_usd / hours / self.instances


@dataclass(frozen=True)
class DeploymentAsk:
    endpoint_name: str
    instance: InstanceType
    instance_count: int
    models: tuple[ModelNeed, ...]
    layout: tuple[str, ...] | None = None  # per-GPU MIG profiles; None: the planner picks
    whole_gpus: bool = False  # no partitions: every copy takes whole GPUs
    plan: ReservedPlan | None = None
    execution_role_arn: str | None = None
    # The role is the first model's, looked up when the deployment starts (the deploy
    # form's check runs before that): not missing, only not known yet.
    role_looked_up_later: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    region: str = "us-east-1"


@dataclass(frozen=True)
class ComponentPlan:
    """One inference component: one model, on one partition type or on whole GPUs."""

    name: str
    model: str
    memory_gb: float
    copies: int
    partition_type: str | None  # "mig-4g.20gb", or None for whole GPUs
    devices: int  # accelerators per copy: 1 on a partition

    def requirements(self) -> dict[str, Any]:
        needs: dict[str, Any] = {
            "NumberOfAcceleratorDevicesRequired": self.devices,
            "MinMemoryRequiredInMb": HOST_MEMORY_MB,
        }
        if self.partition_type:
            needs["AcceleratorPartitionType"] = self.partition_type
        return needs


@dataclass(frozen=True)
class ModelCost:
    model: str  # or IDLE
    share: float  # of the endpoint's accelerators (compute slices or whole devices)
    on_demand_usd_per_hour: float | None  # at the SageMaker hosting rate
    reserved_usd_per_hour: float | None  # at the plan's rate (fee / hours / instances)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "share": round(self.share, 6),
            "on_demand_usd_per_hour": self.on_demand_usd_per_hour,
            "reserved_usd_per_hour": self.reserved_usd_per_hour,
        }


@dataclass(frozen=True)
class DeploymentPlan:
    ask: DeploymentAsk
    errors: tuple[Refusal, ...]
    notes: tuple[str, ...]
    layout: LayoutCheck | None  # None on whole GPUs, or when no layout could be had
    components: tuple[ComponentPlan, ...]
    costs: tuple[ModelCost, ...]
    price: CatalogPrice | None

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def partitioned(self) -> bool:
        return self.layout is not None

    @property
    def endpoint_config_name(self) -> str:
        return self.ask.endpoint_name

    def refused(self, *more: Refusal) -> DeploymentPlan:
        return replace(self, errors=(*self.errors, *more))

    # --- the requests -----------------------------------------------------------------

    def endpoint_config_params(self) -> dict[str, Any]:
        ask = self.ask
        variant: dict[str, Any] = {
            "VariantName": VARIANT,
            "InstanceType": ask.instance.sagemaker_name,
            "InitialInstanceCount": ask.instance_count,
        }
        if ask.plan is not None:
            variant["CapacityReservationConfig"] = {
                "CapacityReservationPreference": RESERVATION_PREFERENCE,
                "MlReservationArn": ask.plan.arn,
            }
        if self.layout is not None and self.layout.valid:
            variant |= self.layout.production_variant_fields()
        params: dict[str, Any] = {
            "EndpointConfigName": self.endpoint_config_name,
            "ProductionVariants": [variant],
        }
        # Endpoints built from inference components run under an execution role.
        if ask.execution_role_arn:
            params["ExecutionRoleArn"] = ask.execution_role_arn
        if ask.tags:
            params["Tags"] = _tags(ask.tags)
        return params

    def endpoint_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "EndpointName": self.ask.endpoint_name,
            "EndpointConfigName": self.endpoint_config_name,
        }
        if self.ask.tags:
            params["Tags"] = _tags(self.ask.tags)
        return params

    def component_params(self, component: ComponentPlan) -> dict[str, Any]:
        params: dict[str, Any] = {
            "InferenceComponentName": component.name,
            "EndpointName": self.ask.endpoint_name,
            "VariantName": VARIANT,
            "Specification": {
                "ModelName": component.model,
                "ComputeResourceRequirements": component.requirements(),
            },
            "RuntimeConfig": {"CopyCount": component.copies},
        }
        if self.ask.tags:
            params["Tags"] = _tags(self.ask.tags)
        return params

    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        """Every request a deployment sends, in order, as (operation, parameters)."""
        return [
            ("CreateEndpointConfig", self.endpoint_config_params()),
            ("CreateEndpoint", self.endpoint_params()),
            *(("CreateInferenceComponent", self.component_params(c)) for c in self.components),
        ]

    def to_json(self) -> dict[str, Any]:
        ask = self.ask
        return {
            "valid": self.valid,
            "errors": [e.to_json() for e in self.errors],
            "notes": list(self.notes),
            "instance_type": ask.instance.sagemaker_name,
            "instance_count": ask.instance_count,
            "layout_per_gpu": list(self.layout.profiles) if self.layout else None,
            "endpoint_config": self.endpoint_config_params() if self.valid else None,
            "endpoint": self.endpoint_params() if self.valid else None,
            "inference_components": (
                [self.component_params(c) for c in self.components] if self.valid else []
            ),
            "cost_per_model": [c.to_json() for c in self.costs] if self.valid else [],
            "price": None
            if self.price is None
            else {
                "usd_per_hour": self.price.usd_per_hour,
                "source": self.price.describe(),
                "estimate": self.price.estimate,
            },
        }


def plan_deployment(
    ask: DeploymentAsk,
    catalog: Catalog,
    *,
    taken_endpoints: frozenset[str] = frozenset(),
    taken_configs: frozenset[str] = frozenset(),
) -> DeploymentPlan:
    """The requests for `ask`, or every rule it breaks.

    Raises `UnknownProfile` for a profile name no GPU has, and `ModelError` for models
    named twice: those are bad input, not refusals.
    """
    if ask.instance_count < 1:
        raise ValueError("instance_count must be at least 1")
    if not ask.models:
        raise ValueError("a deployment needs at least one model")
    errors = _plan_errors(ask) + _name_errors(ask, taken_endpoints, taken_configs)
    notes = _plan_notes(ask)
    instance = ask.instance
    family = FAMILIES.get(instance.mig_family) if instance.mig_family else None
    price = catalog.price(PriceKind.SAGEMAKER_ON_DEMAND, instance.instance_type, ask.region)
    names = _component_names(ask)

    if ask.layout is None and (ask.whole_gpus or family is None):
        if family is None and not ask.whole_gpus:
            notes.append(
                f"{instance.instance_type} ({instance.gpu_model}) has no MIG partitions: "
                "each copy takes whole accelerators"
            )
        components, more = _whole_gpu_components(ask, names)
        costs = _whole_gpu_costs(ask, components, price)
        return DeploymentPlan(ask, (*errors, *more), tuple(notes), None, components, costs, price)

    if ask.layout is None:
        assert family is not None
        planned = plan_layout(instance, ask.models, catalog, ask.region, ask.instance_count)
        if planned.check is None:
            rule = (
                Rule.WHOLE_GPU_ON_PARTITIONED
                if _too_big_for_partitions(family, ask.models)
                else Rule.MORE_COPIES_THAN_PARTITIONS
            )
            errors += [Refusal(rule, reason) for reason in planned.reasons]
            notes += [f"what would fit: {s}" for s in planned.suggestions]
            return DeploymentPlan(ask, tuple(errors), tuple(notes), None, (), (), price)
        check = planned.check
        notes.append(f"layout chosen by the planner: {' + '.join(check.profiles)} per GPU")
    else:
        check = _checked_layout(ask, family)
        errors += [Refusal(Rule.LAYOUT_REJECTED, e) for e in check.errors]
        if not check.valid:
            return DeploymentPlan(ask, tuple(errors), tuple(notes), check, (), (), price)
    assert family is not None
    components, more = _partition_components(ask, check, family, names)
    costs = _partition_costs(ask, family, components, price)
    if check.inference_ami_version:
        notes.append(
            f"InferenceAmiVersion={check.inference_ami_version}: the layout has a profile "
            f"the default {instance.instance_type} image's driver cannot create"
        )
    return DeploymentPlan(ask, (*errors, *more), tuple(notes), check, components, costs, price)


# --- the plan and the names ---------------------------------------------------------------


def _plan_errors(ask: DeploymentAsk) -> list[Refusal]:
    errors = []
    if not ask.execution_role_arn and not ask.role_looked_up_later:
        errors.append(
            Refusal(
                Rule.NO_EXECUTION_ROLE,
                "no execution role: an endpoint built from inference components needs "
                "ExecutionRoleArn in its configuration (the role SageMaker uses to run the "
                "models)",
            )
        )
    if ask.plan is not None:
        errors += plan_refusals(ask.plan, ask.instance, ask.instance_count)
    return errors


def plan_refusals(plan: ReservedPlan, instance: InstanceType, instance_count: int) -> list[Refusal]:
    """Why an endpoint of `instance_count` x `instance` cannot run on `plan` (as far as
    the plan's known facts tell); checked again just before the first change in AWS."""
    errors = []
    if plan.status is not None and plan.status != ACTIVE:
        errors.append(
            Refusal(
                Rule.PLAN_NOT_ACTIVE,
                f"training plan {plan.arn} is {plan.status}; an endpoint can use it only "
                f"while it is {ACTIVE}",
            )
        )
    if plan.target_resources is not None and ENDPOINT_TARGET not in plan.target_resources:
        errors.append(
            Refusal(
                Rule.PLAN_NOT_FOR_ENDPOINTS,
                f"training plan {plan.arn} reserves capacity for "
                f"{', '.join(plan.target_resources) or 'nothing'}, not for endpoints "
                f"(TargetResources must include {ENDPOINT_TARGET})",
            )
        )
    if plan.instance_type is not None:
        reserved = plan.instance_type.lower().removeprefix("ml.")
        if reserved != instance.instance_type:
            errors.append(
                Refusal(
                    Rule.INSTANCE_TYPE_DIFFERS,
                    f"the endpoint asks for {instance.sagemaker_name} but training plan "
                    f"{plan.arn} reserves ml.{reserved}: the instance type must be the plan's",
                )
            )
    if plan.instances is not None and instance_count > plan.instances:
        errors.append(
            Refusal(
                Rule.MORE_INSTANCES_THAN_PLAN,
                f"{instance_count} instances asked; training plan {plan.arn} holds "
                f"{plan.instances}",
            )
        )
    return errors


def _plan_notes(ask: DeploymentAsk) -> list[str]:
    role = (
        ["execution role: the first model's, looked up when the deployment starts"]
        if ask.role_looked_up_later and not ask.execution_role_arn
        else []
    )
    return role + _reservation_notes(ask.plan)


def _reservation_notes(plan: ReservedPlan | None) -> list[str]:
    if plan is None:
        return [
            "no training plan: the endpoint would run on On-Demand capacity "
            "(no CapacityReservationConfig)"
        ]
    unknown = [
        what
        for what, value in (
            ("status", plan.status),
            ("target resources", plan.target_resources),
            ("instance type", plan.instance_type),
            ("instance count", plan.instances),
        )
        if value is None
    ]
    if not unknown:
        return []
    return [
        f"not checked against the plan (not looked up): {', '.join(unknown)}; "
        "the deploy checks them with DescribeTrainingPlan before any change"
    ]


def _name_errors(
    ask: DeploymentAsk, taken_endpoints: frozenset[str], taken_configs: frozenset[str]
) -> list[Refusal]:
    errors = []
    if ask.endpoint_name in taken_endpoints:
        errors.append(
            Refusal(
                Rule.ENDPOINT_NAME_TAKEN,
                f"an endpoint named {ask.endpoint_name} already exists in {ask.region}",
            )
        )
    if ask.endpoint_name in taken_configs:
        errors.append(
            Refusal(
                Rule.ENDPOINT_NAME_TAKEN,
                f"an endpoint configuration named {ask.endpoint_name} already exists "
                f"in {ask.region}",
            )
        )
    return errors


def _component_names(ask: DeploymentAsk) -> dict[str, str]:
    """model -> inference component name: the endpoint's name and the model's, made a
    valid SageMaker name (letters, digits, hyphens; at most 63)."""
    names = {}
    for model in ask.models:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", model.name).strip("-") or "model"
        names[model.name] = entity_name(f"{ask.endpoint_name}-{slug}")
    return names


def entity_name(text: str) -> str:
    """`text` as a SageMaker name of at most 63 characters; a long one is cut and given a
    short digest of the whole, so two long names stay distinct."""
    if len(text) <= _NAME_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: _NAME_MAX - 9].rstrip('-')}-{digest}"


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


# --- partitions ---------------------------------------------------------------------------


def _checked_layout(ask: DeploymentAsk, family: GpuFamily | None) -> LayoutCheck:
    """The asked layout, checked, with the inference image its profiles need."""
    names = [normalize_profile_name(p) for p in read_layout(ask.layout or ())]
    profiles = [p for n in names if family and (p := family.profile(n))]
    needs_driver = any(p.min_driver for p in profiles)
    return check_layout(
        ask.instance,
        names,
        ami=RECOMMENDED_AMI if needs_driver else None,
        instance_count=ask.instance_count,
    )


def _too_big_for_partitions(family: GpuFamily, models: Sequence[ModelNeed]) -> bool:
    largest = max(p.memory_gb for p in family.profiles)
    return any(m.memory_gb > largest for m in models)


def _partition_components(
    ask: DeploymentAsk, check: LayoutCheck, family: GpuFamily, names: Mapping[str, str]
) -> tuple[tuple[ComponentPlan, ...], list[Refusal]]:
    """Each model on the smallest partition type of the layout that holds it and has a
    partition left for every copy (one copy per partition, all copies on one type)."""
    free = check.partitions_by_profile()
    profiles = sorted(
        (
            p
            for n in dict.fromkeys(check.profiles)
            if (p := family.profile(normalize_profile_name(n))) is not None
        ),
        key=lambda p: (p.memory_gb, p.compute_slices, p.name),
    )
    largest = max(family.profiles, key=lambda p: p.memory_gb)
    gpus = ask.instance.gpus * ask.instance_count
    components: list[ComponentPlan] = []
    errors = []
    for model in sorted(ask.models, key=lambda m: (-m.memory_gb, m.name)):
        holding = [p for p in profiles if p.memory_gb >= model.memory_gb]
        if model.memory_gb > largest.memory_gb:
            whole = math.ceil(model.memory_gb / family.memory_gb)
            errors.append(
                Refusal(
                    Rule.WHOLE_GPU_ON_PARTITIONED,
                    f"{model.name} needs {model.memory_gb:g} GB, more than "
                    f"{largest.sagemaker_name}, the largest partition of an "
                    f"{family.gpu_model}: it needs {whole} whole GPU{'s' if whole > 1 else ''}, "
                    "which an endpoint with a partition layout cannot give; deploy it on an "
                    "endpoint without a layout",
                )
            )
            continue
        if not holding:
            fits = min(
                (p for p in family.profiles if p.memory_gb >= model.memory_gb),
                key=lambda p: (p.memory_gb, p.compute_slices),
            )
            errors.append(
                Refusal(
                    Rule.NO_PARTITION_HOLDS_MODEL,
                    f"{model.name} needs {model.memory_gb:g} GB and the layout's largest "
                    f"partition is {profiles[-1].sagemaker_name}; put {fits.sagemaker_name} "
                    "or larger in the layout",
                )
            )
            continue
        spread = _spread(model.copies, holding, free)
        if spread is None:
            room = sum(free[p.sagemaker_name] for p in holding)
            totals = check.partitions_by_profile()
            have = " + ".join(f"{totals[p.sagemaker_name]} x {p.sagemaker_name}" for p in holding)
            errors.append(
                Refusal(
                    Rule.MORE_COPIES_THAN_PARTITIONS,
                    f"{model.name} asks for {counted(model.copies, 'copy')}, one per partition "
                    f"of {model.memory_gb:g} GB or more; {ask.instance_count} x "
                    f"{ask.instance.instance_type} ({counted(gpus, 'GPU')}) with this layout "
                    f"have {have}"
                    + (
                        f", {room} left after larger models"
                        if room < sum(totals[p.sagemaker_name] for p in holding)
                        else ""
                    ),
                )
            )
            continue
        for i, (profile, copies) in enumerate(spread):
            free[profile.sagemaker_name] -= copies
            name = names[model.name] if i == 0 else entity_name(f"{names[model.name]}-{i + 1}")
            components.append(
                ComponentPlan(name, model.name, model.memory_gb, copies, profile.sagemaker_name, 1)
            )
    order = {m.name: i for i, m in enumerate(ask.models)}
    return tuple(sorted(components, key=lambda c: order[c.model])), errors


def _spread(
    copies: int, holding: Sequence[Profile], free: Mapping[str, int]
) -> list[tuple[Profile, int]] | None:
    """Where a model's copies go: all on the smallest partition type with room for every
    copy; failing that, spread smallest first over several types (an inference component
    has one partition type, so each type is one component). None when they do not fit."""
    for profile in holding:
        if free[profile.sagemaker_name] >= copies:
            return [(profile, copies)]
    spread = []
    left = copies
    for profile in holding:
        take = min(left, free[profile.sagemaker_name])
        if take:
            spread.append((profile, take))
            left -= take
    return None if left else spread


def _partition_costs(
    ask: DeploymentAsk,
    family: GpuFamily,
    components: Sequence[ComponentPlan],
    price: CatalogPrice | None,
) -> tuple[ModelCost, ...]:
    assignments = [
        Assignment(c.model, profile, c.copies)
        for c in components
        if c.partition_type
        and (profile := family.profile(normalize_profile_name(c.partition_type)))
    ]
    gpus = ask.instance.gpus * ask.instance_count
    shares = chargeback(family, gpus, assignments, price, ask.instance_count)
    return tuple(_cost(ask, s) for s in shares)


def _cost(ask: DeploymentAsk, share: Share) -> ModelCost:
    rate = ask.plan.reserved_usd_per_instance_hour if ask.plan else None
    reserved = None if rate is None else round(rate * ask.instance_count * share.fraction, 4)
    return ModelCost(share.model, share.fraction, share.usd_per_hour, reserved)


# --- whole GPUs ---------------------------------------------------------------------------


def _whole_gpu_components(
    ask: DeploymentAsk, names: Mapping[str, str]
) -> tuple[tuple[ComponentPlan, ...], list[Refusal]]:
    instance = ask.instance
    components = []
    errors = []
    for model in ask.models:
        devices = max(1, math.ceil(model.memory_gb / instance.gpu_memory_gib))
        if devices > instance.gpus:
            errors.append(
                Refusal(
                    Rule.MORE_COPIES_THAN_GPUS,
                    f"{model.name} needs {model.memory_gb:g} GB, "
                    f"{counted(devices, 'accelerator')} of {instance.gpu_memory_gib} GB; one "
                    f"{instance.instance_type} has "
                    f"{instance.gpus}",
                )
            )
            continue
        components.append(
            ComponentPlan(
                names[model.name], model.name, model.memory_gb, model.copies, None, devices
            )
        )
    # A copy's devices sit on one instance: count whole copies per instance.
    per_instance = _whole_copies_fit(instance.gpus, components)
    if components and not per_instance:
        wanted = ", ".join(f"{c.model} {c.copies} x {c.devices}" for c in components)
        errors.append(
            Refusal(
                Rule.MORE_COPIES_THAN_GPUS,
                f"copies x accelerators asked ({wanted}) do not fit {ask.instance_count} x "
                f"{instance.instance_type} ({counted(instance.gpus, 'accelerator')} each)",
            )
        )
    elif per_instance and len(per_instance) > ask.instance_count:
        errors.append(
            Refusal(
                Rule.MORE_COPIES_THAN_GPUS,
                f"the copies need {len(per_instance)} x {instance.instance_type} "
                f"({counted(instance.gpus, 'accelerator')} each); {ask.instance_count} asked",
            )
        )
    return tuple(components), errors


def _whole_copies_fit(gpus: int, components: Sequence[ComponentPlan]) -> list[int]:
    """First-fit decreasing of every copy's devices into instances of `gpus`: the devices
    used on each instance."""
    bins: list[int] = []
    sizes = sorted((c.devices for c in components for _ in range(c.copies)), reverse=True)
    for size in sizes:
        for i, used in enumerate(bins):
            if used + size <= gpus:
                bins[i] += size
                break
        else:
            bins.append(size)
    return bins


def _whole_gpu_costs(
    ask: DeploymentAsk, components: Sequence[ComponentPlan], price: CatalogPrice | None
) -> tuple[ModelCost, ...]:
    total = ask.instance.gpus * ask.instance_count
    held = {c.model: c.copies * c.devices for c in components}
    held[IDLE] = max(0, total - sum(held.values()))
    rate = price.usd_per_hour * ask.instance_count if price else None
    shares = [
        Share(model, n, n / total, None if rate is None else round(rate * n / total, 4))
        for model, n in held.items()
    ]
    return tuple(_cost(ask, s) for s in shares)
