"""A deployment on MIG partitions: each model on the smallest partition type of the
layout that holds it, one copy per partition, and each model's share of the cost."""

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
from bot.domain.deployment.names import entity_name
from bot.domain.deployment.rules import Refusal, Rule
from bot.domain.mig.layout import LayoutCheck, check_layout, read_layout
from bot.domain.mig.planner import Assignment, ModelNeed, chargeback
from bot.domain.mig.profiles import (
    RECOMMENDED_AMI,
    GpuFamily,
    Profile,
    normalize_profile_name,
)
from bot.domain.words import counted


def checked_layout(ask: DeploymentAsk, family: GpuFamily | None) -> LayoutCheck:
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


def too_big_for_partitions(family: GpuFamily, models: Sequence[ModelNeed]) -> bool:
    largest = max(p.memory_gb for p in family.profiles)
    return any(m.memory_gb > largest for m in models)


def partition_components(
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
    components: list[ComponentPlan] = []
    errors = []
    for model in sorted(ask.models, key=lambda m: (-m.memory_gb, m.name)):
        holding = [p for p in profiles if p.memory_gb >= model.memory_gb]
        refusal = _no_partition_holds(model, family, profiles, holding)
        if refusal is not None:
            errors.append(refusal)
            continue
        spread = _spread(model.copies, holding, free)
        if spread is None:
            errors.append(_no_room(ask, check, model, holding, free))
            continue
        for i, (profile, copies) in enumerate(spread):
            free[profile.sagemaker_name] -= copies
            name = names[model.name] if i == 0 else entity_name(f"{names[model.name]}-{i + 1}")
            components.append(
                ComponentPlan(name, model.name, model.memory_gb, copies, profile.sagemaker_name, 1)
            )
    order = {m.name: i for i, m in enumerate(ask.models)}
    return tuple(sorted(components, key=lambda c: order[c.model])), errors


def _no_partition_holds(
    model: ModelNeed,
    family: GpuFamily,
    profiles: Sequence[Profile],
    holding: Sequence[Profile],
) -> Refusal | None:
    """Why no partition of the layout can hold the model: none of the GPU's does (it needs
    whole GPUs), or the layout has none large enough. None when one can."""
    largest = max(family.profiles, key=lambda p: p.memory_gb)
    if model.memory_gb > largest.memory_gb:
        whole = math.ceil(model.memory_gb / family.memory_gb)
        return Refusal(
            Rule.WHOLE_GPU_ON_PARTITIONED,
            f"{model.name} needs {model.memory_gb:g} GB, more than "
            f"{largest.sagemaker_name}, the largest partition of an "
            f"{family.gpu_model}: it needs {whole} whole GPU{'s' if whole > 1 else ''}, "
            "which an endpoint with a partition layout cannot give; deploy it on an "
            "endpoint without a layout",
        )
    if holding:
        return None
    fits = min(
        (p for p in family.profiles if p.memory_gb >= model.memory_gb),
        key=lambda p: (p.memory_gb, p.compute_slices),
    )
    return Refusal(
        Rule.NO_PARTITION_HOLDS_MODEL,
        f"{model.name} needs {model.memory_gb:g} GB and the layout's largest "
        f"partition is {profiles[-1].sagemaker_name}; put {fits.sagemaker_name} "
        "or larger in the layout",
    )


def _no_room(
    ask: DeploymentAsk,
    check: LayoutCheck,
    model: ModelNeed,
    holding: Sequence[Profile],
    free: Mapping[str, int],
) -> Refusal:
    """The partitions large enough for the model are too few for its copies."""
    gpus = ask.instance.gpus * ask.instance_count
    room = sum(free[p.sagemaker_name] for p in holding)
    totals = check.partitions_by_profile()
    have = " + ".join(f"{totals[p.sagemaker_name]} x {p.sagemaker_name}" for p in holding)
    return Refusal(
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


def partition_costs(
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
    return tuple(model_cost(ask, s) for s in shares)
