"""NVIDIA MIG partition profiles per GPU family, and the SageMaker inference AMIs, as data.

A MIG-capable GPU has a fixed number of compute slices and memory slices. A profile takes
some of each and may only start at certain memory-slice indexes; two partitions may not
share a memory slice (NVIDIA MIG User Guide, "Supported MIG Profiles"; NVML placements).
A100, H100, H200 and B200 share one geometry (7 compute, 8 memory slices): only the
profile names, which carry the nominal memory, differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NAME_RE = re.compile(r"(?P<compute>[0-9]+)g\.(?P<gb>[0-9]+)gb")

# InferenceAmiVersion -> NVIDIA driver branch (None: not a GPU image). From the botocore
# SageMaker model's documentation of ProductionVariant.InferenceAmiVersion.
INFERENCE_AMI_DRIVERS: dict[str, int | None] = {
    "al2-ami-sagemaker-inference-gpu-2": 535,
    "al2-ami-sagemaker-inference-gpu-2-1": 535,
    "al2-ami-sagemaker-inference-gpu-3-1": 550,
    "al2023-ami-sagemaker-inference-gpu-4-1": 580,
    "al2-ami-sagemaker-inference-neuron-2": None,
}
# The image the source article names as the fix for the P4d driver problem (driver 580).
RECOMMENDED_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"


@dataclass(frozen=True)
class Profile:
    name: str  # NVIDIA's name, "4g.20gb"; SageMaker spells it "mig-4g.20gb"
    compute_slices: int
    memory_slices: int
    max_per_gpu: int
    starts: tuple[int, ...]  # memory-slice indexes where a partition of this profile may begin
    min_driver: int | None = None  # driver branch it needs when that is newer than MIG itself

    @property
    def sagemaker_name(self) -> str:
        return f"mig-{self.name}"

    @property
    def memory_gb(self) -> int:
        """The nominal memory in the name (a 1g.5gb partition holds a little under 5 GB)."""
        match = _NAME_RE.fullmatch(self.name)
        assert match, self.name
        return int(match["gb"])


@dataclass(frozen=True)
class GpuFamily:
    key: str  # InstanceType.mig_family in the catalog
    gpu_model: str
    memory_gb: int
    compute_slices: int
    memory_slices: int
    max_partitions: int
    profiles: tuple[Profile, ...]
    default_driver: str | None = None  # NVIDIA driver of SageMaker's default image, when known
    note: str | None = None  # set when part of this table is not from NVIDIA or AWS docs

    def profile(self, name: str) -> Profile | None:
        return next((p for p in self.profiles if p.name == name), None)

    @property
    def profile_names(self) -> str:
        return ", ".join(p.sagemaker_name for p in self.profiles)


# The seven-slice geometry: (compute slices, memory slices, max per GPU, start indexes), in the
# order 1g, 1g with double memory, 2g, 3g, 4g, 7g. A 3g takes 4 of 8 memory slices, so two of
# them fill the memory and nothing fits beside them.
_SEVEN_SLICE = (
    (1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    (1, 2, 4, (0, 2, 4, 6)),
    (2, 2, 3, (0, 2, 4)),
    (3, 4, 2, (0, 4)),
    (4, 4, 1, (0,)),
    (7, 8, 1, (0,)),
)


def _seven_slice(
    key: str,
    gpu_model: str,
    names: tuple[str, str, str, str, str, str],
    min_drivers: dict[str, int] | None = None,
    default_driver: str | None = None,
) -> GpuFamily:
    drivers = min_drivers or {}
    profiles = tuple(
        Profile(name, compute, memory, most, starts, drivers.get(name))
        for name, (compute, memory, most, starts) in zip(names, _SEVEN_SLICE, strict=True)
    )
    return GpuFamily(
        key=key,
        gpu_model=gpu_model,
        memory_gb=profiles[-1].memory_gb,
        compute_slices=7,
        memory_slices=8,
        max_partitions=7,
        profiles=profiles,
        default_driver=default_driver,
    )


_RTX_PRO_NOTE = (
    "partition limits from the source article; profile names from NVIDIA's RTX PRO "
    "documentation, unverified"
)

FAMILIES: dict[str, GpuFamily] = {
    family.key: family
    for family in (
        _seven_slice(
            "a100-40gb",
            "A100 40GB",
            ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
            # Source article: mig-1g.10gb needs R525+, P4d's default image ships 470.256.02.
            min_drivers={"1g.10gb": 525},
            default_driver="470.256.02",
        ),
        _seven_slice(
            "a100-80gb",
            "A100 80GB",
            ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ),
        _seven_slice(
            "h100-80gb",
            "H100 80GB",
            ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ),
        _seven_slice(
            "h200-141gb",
            "H200 141GB",
            ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
        ),
        _seven_slice(
            "b200-180gb",
            "B200 180GB",
            ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
        ),
        # G7: halves, at most 2 partitions.
        GpuFamily(
            key="rtx-pro-4500-32gb",
            gpu_model="RTX PRO 4500 32GB",
            memory_gb=32,
            compute_slices=2,
            memory_slices=2,
            max_partitions=2,
            profiles=(
                Profile("1g.16gb", 1, 1, 2, (0, 1)),
                Profile("2g.32gb", 2, 2, 1, (0,)),
            ),
            note=_RTX_PRO_NOTE,
        ),
        # G7e: quarters, at most 4 partitions.
        GpuFamily(
            key="rtx-pro-6000-96gb",
            gpu_model="RTX PRO 6000 96GB",
            memory_gb=96,
            compute_slices=4,
            memory_slices=4,
            max_partitions=4,
            profiles=(
                Profile("1g.24gb", 1, 1, 4, (0, 1, 2, 3)),
                Profile("2g.48gb", 2, 2, 2, (0, 2)),
                Profile("4g.96gb", 4, 4, 1, (0,)),
            ),
            note=_RTX_PRO_NOTE,
        ),
    )
}


# One grammar for repeating a profile in a layout and a model's copies: `xN` right after
# it or as the next word (1g.5gbx7 or 1g.5gb x7; llama=4gbx2 or llama=4gb x2).
REPEAT = re.compile(r"x(?P<n>[0-9]{1,4})", re.IGNORECASE)
_REPEATED = re.compile(r"(?P<what>.*?[a-z])x(?P<n>[0-9]{1,4})", re.IGNORECASE)
MAX_REPEAT = 64  # a GPU has at most 7 partitions; more is a typo, not a layout
PROFILES_FORM = "PROFILE[xN] ..., e.g. 3g.20gb 2g.10gb 1g.5gb x2 (mig- is optional)"


class RepeatError(ValueError):
    """An `xN` that repeats nothing, or a count out of range."""


def expand_profiles(words: Iterable[str]) -> list[str]:
    """A layout as typed, one profile per partition: each word a PROFILE, a PROFILExN,
    or an `xN` that repeats the profile before it (N times in all)."""
    out: list[str] = []
    for raw in words:
        word = raw.strip()
        if not word:
            continue
        alone = REPEAT.fullmatch(word)
        repeated = _REPEATED.fullmatch(word)
        if alone:
            if not out:
                raise RepeatError(f'"{word}" repeats nothing: put it after a profile')
            out += [out[-1]] * (_count(word, alone["n"]) - 1)
        elif repeated:
            out += [repeated["what"]] * _count(word, repeated["n"])
        else:
            out.append(word)
    return out


def _count(word: str, digits: str) -> int:
    n = int(digits)
    if not 1 <= n <= MAX_REPEAT:
        raise RepeatError(f'"{word}": a profile repeats 1 to {MAX_REPEAT} times')
    return n


def normalize_profile_name(text: str) -> str:
    """NVIDIA's spelling of a profile: accepts "mig-4g.20gb", "4g.20gb", any case."""
    return text.strip().lower().removeprefix("mig-")


def families_with(name: str) -> list[GpuFamily]:
    """The GPU families that have a profile of this (normalized) name."""
    return [f for f in FAMILIES.values() if f.profile(name) is not None]
