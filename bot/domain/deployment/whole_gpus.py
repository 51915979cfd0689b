"""A deployment on whole GPUs: each copy takes whole accelerators of one instance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bot.domain.catalog import CatalogPrice
from bot.domain.deployment.ask import (
    ComponentPlan,
    DeploymentAsk,
    ModelCost,
    model_cost,
)
from bot.domain.deployment.rules import Refusal, Rule
from bot.domain.mig.planner import IDLE, Share
from bot.domain.words import counted


def whole_gpu_components(
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


def whole_gpu_costs(
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
    return tuple(model_cost(ask, s) for s in shares)
