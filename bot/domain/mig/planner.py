"""The MIG planner: which per-GPU layout fits a set of models best on one instance.

Each copy of a model takes one partition whose nominal memory (the GB in the profile
name) is at least the model's need; whatever headroom the model needs (KV cache,
activations) belongs in the figure it is given. One layout applies to every GPU of the
instance, so the instance offers each profile of the layout once per GPU.

Waste is capacity no model can use for the life of the endpoint: headroom inside the
partitions the copies hold, and slices left outside every partition (the layout cannot
change on a running endpoint). Partitions no copy holds are spare, not waste: copies can
be added to them later. They show as idle in the chargeback.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from bot.domain.catalog import Catalog, CatalogPrice, InstanceType, PriceKind
from bot.domain.mig.layout import LayoutCheck, check_layout, find_placement, whole_gpus_message
from bot.domain.mig.profiles import FAMILIES, RECOMMENDED_AMI, REPEAT, GpuFamily, Profile
from bot.domain.words import counted

MAX_COPIES = 1024
_MODEL_RE = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,62})"
    r"=(?P<gb>[0-9]+(?:\.[0-9]+)?)gb"
    r"(?:\s*x(?P<copies>[0-9]+))?",
    re.IGNORECASE,
)
MODEL_FORM = "NAME=MEMORY[xCOPIES], e.g. llama=18gb or embed=4gbx2 (or embed=4gb x2)"
IDLE = "(idle)"  # the chargeback row for compute slices no copy holds


class ModelError(ValueError):
    pass


@dataclass(frozen=True)
class ModelNeed:
    name: str
    memory_gb: float  # GPU memory one copy needs
    copies: int = 1

    def __post_init__(self) -> None:
        if self.memory_gb <= 0:
            raise ModelError(f"model {self.name}: memory must be more than 0 GB")
        if not 1 <= self.copies <= MAX_COPIES:
            raise ModelError(f"model {self.name}: copies must be 1 to {MAX_COPIES}")


def parse_model(text: str) -> ModelNeed:
    """`llama=18gb`, `embed=4gbx2` or `embed=4gb x2` (MEMORY in GB, COPIES 1 to 1024)."""
    match = _MODEL_RE.fullmatch(text.strip())
    if not match:
        raise ModelError(f'cannot read model "{text}"; expected {MODEL_FORM}')
    return ModelNeed(match["name"], float(match["gb"]), int(match["copies"] or 1))


def parse_models(words: Sequence[str]) -> list[ModelNeed]:
    """Models as typed on a command line, where `embed=4gb x2` arrives as two words: an
    `xN` word gives the model before it its copies (the same grammar as a layout's)."""
    models: list[ModelNeed] = []
    pending: str | None = None  # a model word whose copies may follow
    for word in (w.strip() for w in words):
        if not word:
            continue
        if REPEAT.fullmatch(word):
            if pending is None:
                raise ModelError(f'"{word}" gives copies to no model; expected {MODEL_FORM}')
            models[-1] = parse_model(f"{pending}{word}")
            pending = None
            continue
        models.append(parse_model(word))
        pending = word if "x" not in word.lower().rpartition("gb")[2] else None
    return models


@dataclass(frozen=True)
class Assignment:
    model: str
    profile: Profile
    copies: int


@dataclass(frozen=True)
class Share:
    """A model's part of the instance's hourly price, by the compute slices it holds."""

    model: str  # or IDLE
    compute_slices: int
    fraction: float
    usd_per_hour: float | None


@dataclass(frozen=True)
class _Fit:
    layout: tuple[Profile, ...]  # per GPU, largest first
    assignments: tuple[Assignment, ...]
    waste_gb: float
    waste_compute_slices: int


@dataclass(frozen=True)
class Plan:
    instance: InstanceType
    models: tuple[ModelNeed, ...]
    check: LayoutCheck | None  # the chosen layout, validated; None when nothing fits
    assignments: tuple[Assignment, ...]
    waste_gb: float
    waste_compute_slices: int
    price: CatalogPrice | None
    chargeback: tuple[Share, ...]
    reasons: tuple[str, ...]  # why nothing fits
    suggestions: tuple[str, ...]  # what would

    @property
    def fits(self) -> bool:
        return self.check is not None

    def to_json(self) -> dict[str, Any]:
        check = self.check
        price = self.price
        return {
            "fits": self.fits,
            "instance_type": self.instance.instance_type,
            "gpu_model": self.instance.gpu_model,
            "gpus": self.instance.gpus,
            "models": [
                {"name": m.name, "memory_gb": m.memory_gb, "copies": m.copies} for m in self.models
            ],
            "layout_per_gpu": list(check.profiles) if check else None,
            "inference_ami_version": check.inference_ami_version if check else None,
            "AcceleratorPartitionLayouts": check.partition_layouts() if check else None,
            "assignments": [
                {
                    "model": a.model,
                    "profile": a.profile.sagemaker_name,
                    "copies": a.copies,
                    "ComputeResourceRequirements": check.component_requirements(a.profile.name),
                }
                for a in self.assignments
            ]
            if check
            else [],
            "waste": {"memory_gb": self.waste_gb, "compute_slices": self.waste_compute_slices},
            "price": None
            if price is None
            else {
                "usd_per_hour": price.usd_per_hour,
                "source": price.describe(),
                "estimate": price.estimate,
            },
            "chargeback": [
                {
                    "model": s.model,
                    "compute_slices": s.compute_slices,
                    "fraction": round(s.fraction, 6),
                    "usd_per_hour": s.usd_per_hour,
                }
                for s in self.chargeback
            ],
            "reasons": list(self.reasons),
            "suggestions": list(self.suggestions),
            "check": check.to_json() if check else None,
        }


def plan_layout(
    instance: InstanceType,
    models: Sequence[ModelNeed],
    catalog: Catalog,
    region: str = "us-east-1",
    instance_count: int = 1,
) -> Plan:
    """The least wasteful layout for these models on `instance_count` instances (one layout
    on every GPU of every instance), or why there is none."""
    if instance_count < 1:
        raise ValueError("instance_count must be at least 1")
    if not models:
        raise ValueError("a plan needs at least one model")
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ModelError(f"each model once, please: {', '.join(names)}")
    family = FAMILIES.get(instance.mig_family) if instance.mig_family else None
    # SageMaker endpoints bill at the SageMaker hosting rate; the catalog falls back to the
    # EC2 On-Demand figure and labels it an estimate.
    price = catalog.price(PriceKind.SAGEMAKER_ON_DEMAND, instance.instance_type, region)
    gpus = instance.gpus * instance_count
    fit = _best_fit(family, gpus, models) if family else None
    if family is None or fit is None:
        return Plan(
            instance=instance,
            models=tuple(models),
            check=None,
            assignments=(),
            waste_gb=0.0,
            waste_compute_slices=0,
            price=price,
            chargeback=(),
            reasons=tuple(_reasons(instance, family, models, instance_count)),
            suggestions=tuple(_suggestions(instance, family, models, catalog, region)),
        )
    needs_driver = any(p.min_driver for p in fit.layout)
    check = check_layout(
        instance,
        [p.name for p in fit.layout],
        ami=RECOMMENDED_AMI if needs_driver else None,
        instance_count=instance_count,
    )
    assert check.valid, check.errors  # every layout _best_fit considers has a placement
    return Plan(
        instance=instance,
        models=tuple(models),
        check=check,
        assignments=fit.assignments,
        waste_gb=fit.waste_gb,
        waste_compute_slices=fit.waste_compute_slices,
        price=price,
        chargeback=chargeback(family, gpus, fit.assignments, price, instance_count),
        reasons=(),
        suggestions=(),
    )


@cache
def gpu_layouts(family: GpuFamily) -> tuple[tuple[Profile, ...], ...]:
    """Every multiset of profiles that one GPU of this family can hold at once."""
    counts = [range(p.max_per_gpu + 1) for p in family.profiles]
    layouts = []
    for combo in itertools.product(*counts):
        layout = tuple(p for p, n in zip(family.profiles, combo, strict=True) for _ in range(n))
        if 0 < len(layout) <= family.max_partitions and find_placement(family, layout) is not None:
            layouts.append(tuple(sorted(layout, key=_largest_first)))
    return tuple(layouts)


def _largest_first(p: Profile) -> tuple[int, int, str]:
    return (-p.compute_slices, -p.memory_slices, p.name)


def _best_fit(family: GpuFamily, gpus: int, models: Sequence[ModelNeed]) -> _Fit | None:
    fits = [
        fit
        for layout in gpu_layouts(family)
        if (fit := _fit(family, gpus, layout, models)) is not None
    ]
    if not fits:
        return None
    return min(
        fits,
        key=lambda f: (
            f.waste_gb,
            f.waste_compute_slices,
            len(f.layout),
            any(p.min_driver for p in f.layout),  # prefer no AMI change
            [p.name for p in f.layout],
        ),
    )


def _fit(
    family: GpuFamily, gpus: int, layout: tuple[Profile, ...], models: Sequence[ModelNeed]
) -> _Fit | None:
    """Assign copies to this layout repeated on `gpus` GPUs, or None if they do not fit.

    Largest need first, each into the smallest free partition that holds it. This fits
    whenever any assignment fits, and holds the least memory: moving the largest copy into
    the smallest partition that holds it never raises the total.
    """
    free = {p: layout.count(p) * gpus for p in dict.fromkeys(layout)}
    smallest_first = sorted(free, key=lambda p: (p.memory_gb, p.compute_slices, p.name))
    assignments = []
    headroom = 0.0
    for model in sorted(models, key=lambda m: (-m.memory_gb, m.name)):
        left = model.copies
        for profile in smallest_first:
            if left and profile.memory_gb >= model.memory_gb and free[profile]:
                take = min(left, free[profile])
                free[profile] -= take
                left -= take
                headroom += take * (profile.memory_gb - model.memory_gb)
                assignments.append(Assignment(model.name, profile, take))
        if left:
            return None
    slice_gb = family.memory_gb / family.memory_slices
    unpartitioned_memory = family.memory_slices - sum(p.memory_slices for p in layout)
    unpartitioned_compute = family.compute_slices - sum(p.compute_slices for p in layout)
    return _Fit(
        layout=layout,
        assignments=tuple(assignments),
        waste_gb=round(headroom + unpartitioned_memory * slice_gb * gpus, 3),
        waste_compute_slices=unpartitioned_compute * gpus,
    )


def chargeback(
    family: GpuFamily,
    gpus: int,
    assignments: Sequence[Assignment],
    price: CatalogPrice | None,
    instances: int = 1,
) -> tuple[Share, ...]:
    """Each model's share of the hourly price of `instances` instances holding `gpus` GPUs
    in all, by the compute slices its copies hold."""
    total = family.compute_slices * gpus
    held: dict[str, int] = {}
    for a in assignments:
        held[a.model] = held.get(a.model, 0) + a.copies * a.profile.compute_slices
    held[IDLE] = total - sum(held.values())

    def usd(slices: int) -> float | None:
        if price is None:
            return None
        return round(price.usd_per_hour * instances * slices / total, 4)

    return tuple(Share(name, n, n / total, usd(n)) for name, n in held.items())


def _smallest_holding(family: GpuFamily, memory_gb: float) -> Profile | None:
    holding = [p for p in family.profiles if p.memory_gb >= memory_gb]
    return min(holding, key=lambda p: (p.memory_gb, p.compute_slices), default=None)


def _reasons(
    instance: InstanceType,
    family: GpuFamily | None,
    models: Sequence[ModelNeed],
    instance_count: int = 1,
) -> list[str]:
    if family is None:
        return [f"{instance.instance_type} ({instance.gpu_model}) has no MIG partition profiles"]
    reasons = []
    largest = max(family.profiles, key=lambda p: p.memory_gb)
    for m in models:
        if _smallest_holding(family, m.memory_gb) is None:
            gpus = math.ceil(m.memory_gb / family.memory_gb)
            reasons.append(
                f"{m.name} needs {m.memory_gb:g} GB, more than {largest.sagemaker_name}, the "
                f"largest partition of an {family.gpu_model}: " + whole_gpus_message(m.name, gpus)
            )
    if reasons:
        return reasons
    return [_capacity_reason(instance, family, models, instance_count)]


def _capacity_reason(
    instance: InstanceType, family: GpuFamily, models: Sequence[ModelNeed], instance_count: int
) -> str:
    """Name the memory size that runs out, or say the copies only fail together."""
    gpus = instance.gpus * instance_count
    where = f"{instance.instance_type} ({counted(instance.gpus, 'GPU')})"
    if instance_count > 1:
        where = f"{instance_count}x {where}"
    for need in sorted({m.memory_gb for m in models}, reverse=True):
        wanted = sum(m.copies for m in models if m.memory_gb >= need)
        per_gpu = max(
            sum(1 for p in layout if p.memory_gb >= need) for layout in gpu_layouts(family)
        )
        if wanted > per_gpu * gpus:
            return (
                f"{counted(wanted, 'copy')} need {need:g} GB or more; one {family.gpu_model} "
                f"holds at most {counted(per_gpu, 'partition')} that large, so {where} holds "
                f"{per_gpu * gpus}"
            )
    smallest = ", ".join(
        f"{m.name} x{m.copies} on {p.sagemaker_name} or larger"
        for m in models
        if (p := _smallest_holding(family, m.memory_gb))
    )
    return (
        f"each size fits on its own, but no one layout, repeated on every GPU of {where}, "
        f"holds them all at once ({smallest})"
    )


def _suggestions(
    instance: InstanceType,
    family: GpuFamily | None,
    models: Sequence[ModelNeed],
    catalog: Catalog,
    region: str,
) -> list[str]:
    others = []  # (USD/h, type, description) of the types that hold every copy
    for name in catalog.instance_types:
        other = catalog.instance(name)
        other_family = FAMILIES.get(other.mig_family) if other.mig_family else None
        if name == instance.instance_type or other_family is None:
            continue
        fit = _best_fit(other_family, other.gpus, models)
        if fit:
            price = catalog.price(PriceKind.SAGEMAKER_ON_DEMAND, name, region)
            layout = " + ".join(p.sagemaker_name for p in fit.layout)
            text = f"another instance type: {name} ({other.gpus}x {other.gpu_model}) with {layout}"
            text += f" per GPU, {_usd(price)}" if price else " per GPU"
            others.append((price.usd_per_hour if price else math.inf, name, text))
    suggestions = [text for _, _, text in sorted(others)[:3]]
    if family is not None:
        for m in models:
            if _smallest_holding(family, m.memory_gb) is None:
                suggestions.append(_bigger_profile(m, catalog))
    if not suggestions:
        suggestions.append("fewer copies per instance: split the models over more instances")
    return suggestions


def _usd(price: CatalogPrice) -> str:
    return f"{price.usd_per_hour:g} USD/h{' (estimate)' if price.estimate else ''}"


def _bigger_profile(model: ModelNeed, catalog: Catalog) -> str:
    """Where a model too big for this GPU's partitions would fit a partition, or whole GPUs."""
    options = []
    for family in FAMILIES.values():
        profile = _smallest_holding(family, model.memory_gb)
        if profile:
            types = [
                t for t in catalog.instance_types if catalog.instance(t).mig_family == family.key
            ]
            options.append((profile.memory_gb, f"{profile.sagemaker_name} on {', '.join(types)}"))
    if not options:
        return (
            f"whole GPUs: {model.name} ({model.memory_gb:g} GB) fits no MIG partition on any GPU; "
            "give it whole GPUs on an endpoint without a partition layout"
        )
    return f"a bigger profile: {model.name} fits {min(options)[1]}"
