"""What a deployment onto a training plan would send, or why it is refused.

`plan_deployment` turns a reserved plan, the models (memory need and copies each), an
instance count and an optional per-GPU MIG layout into the CreateEndpointConfig,
CreateEndpoint and CreateInferenceComponent parameters, checking every rule before any
AWS call. Without a layout the MIG planner picks one; an instance type without MIG
profiles (or `whole_gpus`) gives each copy whole GPUs instead.

Pure: the caller supplies what it knows of the plan and which names are taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.domain.catalog import Catalog, CatalogPrice, PriceKind
from bot.domain.deployment.ask import (
    ComponentPlan,
    DeploymentAsk,
    ModelCost,
)
from bot.domain.deployment.checks import name_errors, plan_errors, plan_notes
from bot.domain.deployment.names import component_names
from bot.domain.deployment.partitions import (
    checked_layout,
    partition_components,
    partition_costs,
    too_big_for_partitions,
)
from bot.domain.deployment.rules import Refusal, Rule
from bot.domain.deployment.whole_gpus import whole_gpu_components, whole_gpu_costs
from bot.domain.mig.layout import LayoutCheck
from bot.domain.mig.planner import plan_layout
from bot.domain.mig.profiles import FAMILIES, GpuFamily

VARIANT = "AllTraffic"
RESERVATION_PREFERENCE = "capacity-reservations-only"


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
    errors = plan_errors(ask) + name_errors(ask, taken_endpoints, taken_configs)
    notes = plan_notes(ask)
    instance = ask.instance
    family = FAMILIES.get(instance.mig_family) if instance.mig_family else None
    price = catalog.price(PriceKind.SAGEMAKER_ON_DEMAND, instance.instance_type, ask.region)
    names = component_names(ask)
    if ask.layout is None and (ask.whole_gpus or family is None):
        return _on_whole_gpus(ask, family, errors, notes, names, price)
    check = _layout(ask, family, catalog, errors, notes)
    if check is None or not check.valid:
        return DeploymentPlan(ask, tuple(errors), tuple(notes), check, (), (), price)
    assert family is not None
    components, more = partition_components(ask, check, family, names)
    costs = partition_costs(ask, family, components, price)
    if check.inference_ami_version:
        notes.append(
            f"InferenceAmiVersion={check.inference_ami_version}: the layout has a profile "
            f"the default {instance.instance_type} image's driver cannot create"
        )
    return DeploymentPlan(ask, (*errors, *more), tuple(notes), check, components, costs, price)


def _on_whole_gpus(
    ask: DeploymentAsk,
    family: GpuFamily | None,
    errors: list[Refusal],
    notes: list[str],
    names: Mapping[str, str],
    price: CatalogPrice | None,
) -> DeploymentPlan:
    """No layout asked, and whole GPUs asked for or no MIG on the type: every copy takes
    whole accelerators."""
    instance = ask.instance
    if family is None and not ask.whole_gpus:
        notes.append(
            f"{instance.instance_type} ({instance.gpu_model}) has no MIG partitions: "
            "each copy takes whole accelerators"
        )
    components, more = whole_gpu_components(ask, names)
    costs = whole_gpu_costs(ask, components, price)
    return DeploymentPlan(ask, (*errors, *more), tuple(notes), None, components, costs, price)


def _layout(
    ask: DeploymentAsk,
    family: GpuFamily | None,
    catalog: Catalog,
    errors: list[Refusal],
    notes: list[str],
) -> LayoutCheck | None:
    """The asked layout checked, or the planner's choice; None when the planner found
    none. Adds to `errors` and `notes` what it found."""
    if ask.layout is not None:
        check = checked_layout(ask, family)
        errors += [Refusal(Rule.LAYOUT_REJECTED, e) for e in check.errors]
        return check
    assert family is not None
    planned = plan_layout(ask.instance, ask.models, catalog, ask.region, ask.instance_count)
    if planned.check is None:
        rule = (
            Rule.WHOLE_GPU_ON_PARTITIONED
            if too_big_for_partitions(family, ask.models)
            else Rule.MORE_COPIES_THAN_PARTITIONS
        )
        errors += [Refusal(rule, reason) for reason in planned.reasons]
        notes += [f"what would fit: {s}" for s in planned.suggestions]
        return None
    notes.append(f"layout chosen by the planner: {' + '.join(planned.check.profiles)} per GPU")
    return planned.check


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]
