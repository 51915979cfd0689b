"""The MIG layout validator and its rendering as SageMaker request fields.

`check_layout` answers, before anyone pays for an endpoint, whether one per-GPU layout of
MIG profiles works on an instance type. It collects every problem rather than stopping at
the first; only a profile name that exists on no GPU at all raises (`UnknownProfile`).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bot.domain.catalog import InstanceType
from bot.domain.mig.profiles import (
    FAMILIES,
    INFERENCE_AMI_DRIVERS,
    PROFILES_FORM,
    RECOMMENDED_AMI,
    GpuFamily,
    Profile,
    RepeatError,
    expand_profiles,
    families_with,
    normalize_profile_name,
)
from bot.domain.words import counted


class EndpointKind(StrEnum):
    INFERENCE_COMPONENTS = "inference-components"
    SINGLE_MODEL = "single-model"
    SERVERLESS = "serverless"
    HETEROGENEOUS_POOL = "heterogeneous-pool"


class UnknownProfile(ValueError):
    """Profile names that no GPU family has; `suggestions` are the closest real ones."""

    def __init__(self, names: list[str], suggestions: list[str], problem: str = "") -> None:
        self.names = names
        self.suggestions = suggestions
        listed = ", ".join(f'"{n}"' for n in names)
        hint = f"; closest known: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(problem or f"unknown MIG profile {listed}{hint}")


def read_layout(words: Sequence[str]) -> list[str]:
    """The profiles of a layout as typed (`PROFILE[xN]`, or `xN` after a profile: see
    `expand_profiles`), one per partition; `UnknownProfile` for an `xN` out of place."""
    try:
        return expand_profiles(words)
    except RepeatError as exc:
        raise UnknownProfile([], [], f"{exc}; a layout is {PROFILES_FORM}") from None


@dataclass(frozen=True)
class Placement:
    profile: Profile
    start: int  # first memory slice

    @property
    def end(self) -> int:  # last memory slice, inclusive
        return self.start + self.profile.memory_slices - 1


@dataclass(frozen=True)
class LayoutCheck:
    """The verdict on one per-GPU layout; SageMaker applies it to every GPU of the instance."""

    instance: InstanceType
    profiles: tuple[str, ...]  # SageMaker names, in the order given
    errors: tuple[str, ...]
    placement: tuple[Placement, ...]  # by start slice; empty unless valid
    family: GpuFamily | None
    inference_ami_version: str | None
    instance_count: int

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def partitions_per_gpu(self) -> int:
        return len(self.profiles)

    @property
    def partitions_per_instance(self) -> int:
        return self.partitions_per_gpu * self.instance.gpus

    @property
    def partitions_total(self) -> int:
        return self.partitions_per_instance * self.instance_count

    def partitions_by_profile(self) -> dict[str, int]:
        """How many partitions of each profile the whole endpoint gets."""
        scale = self.instance.gpus * self.instance_count
        return {name: n * scale for name, n in Counter(self.profiles).items()}

    @property
    def unused_compute_slices(self) -> int | None:
        """Compute slices per GPU that no partition holds; None unless the layout is valid."""
        if not self.valid or self.family is None:
            return None
        return self.family.compute_slices - sum(p.profile.compute_slices for p in self.placement)

    @property
    def unused_memory_slices(self) -> int | None:
        if not self.valid or self.family is None:
            return None
        return self.family.memory_slices - sum(p.profile.memory_slices for p in self.placement)

    def partition_layouts(self) -> list[dict[str, list[str]]]:
        """The exact ProductionVariant.AcceleratorPartitionLayouts value: one layout."""
        self._require_valid()
        return [{"AcceleratorPartitionTypes": list(self.profiles)}]

    def production_variant_fields(self) -> dict[str, Any]:
        """The fields this layout adds to the endpoint config's production variant."""
        fields: dict[str, Any] = {"AcceleratorPartitionLayouts": self.partition_layouts()}
        if self.inference_ami_version:
            fields["InferenceAmiVersion"] = self.inference_ami_version
        return fields

    def component_requirements(self, profile: str) -> dict[str, Any]:
        """The accelerator part of an inference component's ComputeResourceRequirements.

        The API also requires MinMemoryRequiredInMb (host memory), which the deployer adds.
        """
        self._require_valid()
        errors = component_errors(self, profile)
        if errors:
            raise ValueError("; ".join(errors))
        return {
            "AcceleratorPartitionType": _sagemaker_name(profile),
            "NumberOfAcceleratorDevicesRequired": 1,
        }

    def to_json(self) -> dict[str, Any]:
        family = self.family
        return {
            "valid": self.valid,
            "errors": list(self.errors),
            "instance_type": self.instance.instance_type,
            "sagemaker_instance_type": self.instance.sagemaker_name,
            "gpu_model": self.instance.gpu_model,
            "gpus": self.instance.gpus,
            "instance_count": self.instance_count,
            "profiles": list(self.profiles),
            "inference_ami_version": self.inference_ami_version,
            "placement": [
                {"profile": p.profile.sagemaker_name, "memory_slices": [p.start, p.end]}
                for p in self.placement
            ],
            # An invalid layout makes no partitions: nothing to count.
            "partitions_per_gpu": self.partitions_per_gpu if self.valid else None,
            "partitions_per_instance": self.partitions_per_instance if self.valid else None,
            "partitions_total": self.partitions_total if self.valid else None,
            "partitions_by_profile": self.partitions_by_profile() if self.valid else None,
            "compute_slices_per_gpu": family.compute_slices if family else None,
            "memory_slices_per_gpu": family.memory_slices if family else None,
            "unused_compute_slices_per_gpu": self.unused_compute_slices,
            "unused_memory_slices_per_gpu": self.unused_memory_slices,
            "note": family.note if family else None,
            "AcceleratorPartitionLayouts": self.partition_layouts() if self.valid else None,
            "ComputeResourceRequirements": (
                {name: self.component_requirements(name) for name in dict.fromkeys(self.profiles)}
                if self.valid
                else None
            ),
        }

    def _require_valid(self) -> None:
        if not self.valid:
            raise ValueError(f"invalid layout: {'; '.join(self.errors)}")


def check_layout(
    instance: InstanceType,
    profiles: Sequence[str],
    *,
    ami: str | None = None,
    endpoint: EndpointKind = EndpointKind.INFERENCE_COMPONENTS,
    instance_count: int = 1,
) -> LayoutCheck:
    """Check one per-GPU layout of MIG profiles (with or without the "mig-" prefix, each
    repeated with `xN` as `read_layout` reads it)."""
    if instance_count < 1:
        raise ValueError("instance_count must be at least 1")
    names = tuple(normalize_profile_name(p) for p in read_layout(profiles))
    family = FAMILIES.get(instance.mig_family) if instance.mig_family else None
    _reject_unknown(names, family)

    errors = _endpoint_errors(endpoint) + _ami_errors(ami)
    placement: tuple[Placement, ...] = ()
    if family is None:
        errors.append(_no_mig_message(instance))
    elif wrong := [n for n in dict.fromkeys(names) if family.profile(n) is None]:
        errors.append(_wrong_family_message(wrong, family, instance))
    elif not names:
        errors.append("a layout needs at least one profile")
    else:
        chosen = [p for n in names if (p := family.profile(n)) is not None]
        errors += _driver_errors(chosen, family, instance, ami)
        if count_errors := _count_errors(chosen, family):
            errors += count_errors
        elif (found := find_placement(family, chosen)) is None:
            errors.append(_no_placement_message(chosen, family))
        elif not errors:
            placement = found
    return LayoutCheck(
        instance=instance,
        profiles=tuple(_sagemaker_name(n) for n in names),
        errors=tuple(errors),
        placement=placement,
        family=family,
        inference_ami_version=ami,
        instance_count=instance_count,
    )


def find_placement(family: GpuFamily, profiles: Sequence[Profile]) -> tuple[Placement, ...] | None:
    """A start slice for every profile with no memory slice shared, or None.

    Slice sums are not enough: a placement has to exist for all profiles at once.
    """
    if sum(p.compute_slices for p in profiles) > family.compute_slices:
        return None
    # Largest first: the big profiles have the fewest starts, so dead ends show up early.
    todo = sorted(profiles, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))

    def place(i: int, used: int) -> list[Placement] | None:
        if i == len(todo):
            return []
        profile = todo[i]
        for start in profile.starts:
            mask = ((1 << profile.memory_slices) - 1) << start
            if not used & mask:
                rest = place(i + 1, used | mask)
                if rest is not None:
                    return [Placement(profile, start), *rest]
        return None

    found = place(0, 0)
    return None if found is None else tuple(sorted(found, key=lambda p: p.start))


def component_errors(check: LayoutCheck, profile: str, accelerators: int = 1) -> list[str]:
    """Problems with an inference component asking for `profile` on this layout."""
    errors = []
    name = _sagemaker_name(profile)
    if name not in check.profiles:
        errors.append(f"{name} is not in the endpoint's layout ({', '.join(check.profiles)})")
    if accelerators > 1:
        needs = f"a model that needs {counted(accelerators, 'GPU')}"
        errors.append(whole_gpus_message(needs, accelerators))
    return errors


def whole_gpus_message(subject: str, gpus: int) -> str:
    return (
        f"{subject} cannot use MIG partitions: it uses whole GPUs "
        f"(NumberOfAcceleratorDevicesRequired={gpus}, no AcceleratorPartitionType) "
        "on an endpoint without a partition layout"
    )


def _sagemaker_name(name: str) -> str:
    return f"mig-{normalize_profile_name(name)}"


def _reject_unknown(names: Sequence[str], family: GpuFamily | None) -> None:
    unknown = [n for n in dict.fromkeys(names) if not families_with(n)]
    if not unknown:
        return
    pool = [p.name for p in family.profiles] if family else _all_profile_names()
    close = difflib.get_close_matches(unknown[0], pool, n=3, cutoff=0.5)
    raise UnknownProfile([_sagemaker_name(n) for n in unknown], [_sagemaker_name(c) for c in close])


def _all_profile_names() -> list[str]:
    return list(dict.fromkeys(p.name for f in FAMILIES.values() for p in f.profiles))


def _endpoint_errors(endpoint: EndpointKind) -> list[str]:
    if endpoint is EndpointKind.INFERENCE_COMPONENTS:
        return []
    return [
        f"MIG partitions need an endpoint built from inference components; "
        f"a {endpoint.value} endpoint cannot use them (nor can single-model, serverless "
        "or heterogeneous-pool endpoints)"
    ]


def _ami_errors(ami: str | None) -> list[str]:
    if ami is None:
        return []
    if ami not in INFERENCE_AMI_DRIVERS:
        return [
            f'unknown InferenceAmiVersion "{ami}"; accepted: {", ".join(INFERENCE_AMI_DRIVERS)}'
        ]
    if INFERENCE_AMI_DRIVERS[ami] is None:
        gpu_amis = [a for a, driver in INFERENCE_AMI_DRIVERS.items() if driver is not None]
        return [
            f"InferenceAmiVersion {ami} is for Inferentia and Trainium, not NVIDIA GPUs; "
            f"use one of {', '.join(gpu_amis)}"
        ]
    return []


def _no_mig_message(instance: InstanceType) -> str:
    return (
        f"{instance.instance_type} ({instance.gpu_model}) has no MIG partition profiles; "
        f"GPUs with them: {', '.join(f.gpu_model for f in FAMILIES.values())}"
    )


def _wrong_family_message(wrong: list[str], family: GpuFamily, instance: InstanceType) -> str:
    def owners(name: str) -> str:
        return " / ".join(f.gpu_model for f in families_with(name))

    listed = ", ".join(f"{_sagemaker_name(n)} ({owners(n)})" for n in wrong)
    return (
        f"{listed}: not a profile of the {family.gpu_model} in {instance.instance_type}; "
        f"its profiles are {family.profile_names}"
    )


def _driver_errors(
    profiles: Sequence[Profile], family: GpuFamily, instance: InstanceType, ami: str | None
) -> list[str]:
    if ami is None:
        driver, source = family.default_driver, f"the default {instance.instance_type} image"
    elif (branch := INFERENCE_AMI_DRIVERS.get(ami)) is not None:
        driver, source = str(branch), f"InferenceAmiVersion {ami}"
    else:
        return []  # _ami_errors reports an unknown or non-GPU AMI
    if driver is None:
        return []  # SageMaker's default driver for this GPU is not known here
    major = int(driver.split(".")[0])
    return [
        f"{p.sagemaker_name} needs NVIDIA driver R{p.min_driver} or newer and {source} has "
        f"{driver} (the failure would not name the profile): set "
        f"InferenceAmiVersion={RECOMMENDED_AMI} (driver {INFERENCE_AMI_DRIVERS[RECOMMENDED_AMI]})"
        for p in dict.fromkeys(profiles)
        if p.min_driver is not None and major < p.min_driver
    ]


def _count_errors(profiles: Sequence[Profile], family: GpuFamily) -> list[str]:
    if len(profiles) > family.max_partitions:
        return [
            f"{len(profiles)} partitions per GPU; an {family.gpu_model} takes at most "
            f"{family.max_partitions}"
        ]
    return [
        f"{n} x {p.sagemaker_name}: at most {p.max_per_gpu} fit on one {family.gpu_model}"
        for p, n in Counter(profiles).items()
        if n > p.max_per_gpu
    ]


def _no_placement_message(profiles: Sequence[Profile], family: GpuFamily) -> str:
    counts = Counter(profiles)
    listed = " + ".join(
        f"{p.sagemaker_name} x{n}" if n > 1 else p.sagemaker_name for p, n in counts.items()
    )
    sizes = ", ".join(
        f"{p.sagemaker_name} takes {p.memory_slices} memory and {p.compute_slices} compute"
        for p in counts
    )
    compute = sum(p.compute_slices for p in profiles)
    memory = sum(p.memory_slices for p in profiles)
    return (
        f"no placement on one {family.gpu_model} holds {listed}: they need {compute} of "
        f"{family.compute_slices} compute slices and {memory} of {family.memory_slices} "
        f"memory slices, and partitions cannot share a memory slice ({sizes})"
    )
