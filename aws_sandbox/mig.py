"""MIG GPU partitions as a SageMaker endpoint applies them, written out for the sandbox.

Sources: NVIDIA MIG User Guide (r580), "Supported MIG Profiles" (each profile's compute and
memory slices and the memory-slice indexes a partition may start at); SageMaker Developer
Guide, MIG for inference components (one layout per variant, applied to every GPU; one
copy per partition); the source article (mig-1g.10gb on P4d needs an R525+ driver, the
default image ships 470.256.02, and the endpoint then fails without naming the profile;
al2023-ami-sagemaker-inference-gpu-4-1 carries a 580 driver). RTX PRO partition limits
are the source article's (G7 halves, G7e quarters); their profile names are unverified.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Profile kind -> (compute slices, memory slices, memory-slice starts), on the GPUs whose
# compute is cut in 7 and memory in 8 (A100, H100, H200, B200).
_SEVENTHS = {
    "1g": (1, 1, (0, 1, 2, 3, 4, 5, 6)),
    "1g-double": (1, 2, (0, 2, 4, 6)),
    "2g": (2, 2, (0, 2, 4)),
    "3g": (3, 4, (0, 4)),
    "4g": (4, 4, (0,)),
    "7g": (7, 8, (0,)),
}
_SEVENTH_NAMES = {
    # GPU model: profile names in the order of _SEVENTHS
    "A100 40GB": ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100 80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100 80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H200 141GB": ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "B200 180GB": ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
}


@dataclass(frozen=True)
class Slices:
    compute: int
    memory: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Gpu:
    compute: int
    memory: int
    profiles: dict[str, Slices]  # NVIDIA's name ("4g.20gb") -> its slices
    default_driver: int | None = None  # driver branch of SageMaker's default image, if known
    newer_driver: dict[str, int] | None = None  # profile -> the driver branch it needs


def _sevenths(model: str) -> dict[str, Slices]:
    return {
        name: Slices(*_SEVENTHS[kind])
        for name, kind in zip(_SEVENTH_NAMES[model], _SEVENTHS, strict=True)
    }


GPUS: dict[str, Gpu] = {
    "A100 40GB": Gpu(7, 8, _sevenths("A100 40GB"), 470, {"1g.10gb": 525}),
    "A100 80GB": Gpu(7, 8, _sevenths("A100 80GB")),
    "H100 80GB": Gpu(7, 8, _sevenths("H100 80GB")),
    "H200 141GB": Gpu(7, 8, _sevenths("H200 141GB")),
    "B200 180GB": Gpu(7, 8, _sevenths("B200 180GB")),
    "RTX PRO 4500 32GB": Gpu(
        2, 2, {"1g.16gb": Slices(1, 1, (0, 1)), "2g.32gb": Slices(2, 2, (0,))}
    ),
    "RTX PRO 6000 96GB": Gpu(
        4,
        4,
        {
            "1g.24gb": Slices(1, 1, (0, 1, 2, 3)),
            "2g.48gb": Slices(2, 2, (0, 2)),
            "4g.96gb": Slices(4, 4, (0,)),
        },
    ),
}

# InferenceAmiVersion -> NVIDIA driver branch (the SageMaker API reference's list).
AMI_DRIVERS: dict[str, int | None] = {
    "al2-ami-sagemaker-inference-gpu-2": 535,
    "al2-ami-sagemaker-inference-gpu-2-1": 535,
    "al2-ami-sagemaker-inference-gpu-3-1": 550,
    "al2023-ami-sagemaker-inference-gpu-4-1": 580,
    "al2-ami-sagemaker-inference-neuron-2": None,
}

_SAGEMAKER_NAME = re.compile(r"mig-(?P<name>[0-9]+g\.[0-9]+gb)")


def profile_name(partition_type: str) -> str | None:
    """NVIDIA's name for a SageMaker `mig-…` partition type; None if it is not one."""
    match = _SAGEMAKER_NAME.fullmatch(partition_type)
    return match["name"] if match else None


def layout_problem(gpu_model: str, partition_types: Sequence[str]) -> str | None:
    """Why this per-GPU layout cannot be made on the GPU, or None when it can."""
    gpu = GPUS.get(gpu_model)
    if gpu is None:
        return f"the {gpu_model} GPU has no MIG partitions"
    if not partition_types:
        return "the layout names no partition type"
    names = [profile_name(t) for t in partition_types]
    unknown = [t for t, n in zip(partition_types, names, strict=True) if n not in gpu.profiles]
    if unknown:
        known = ", ".join(f"mig-{n}" for n in gpu.profiles)
        return f"{', '.join(unknown)} is not a partition type of the {gpu_model} ({known})"
    if not _fits(gpu, Counter(n for n in names if n)):
        return f"{', '.join(partition_types)} do not fit together on one {gpu_model}"
    return None


def _fits(gpu: Gpu, wanted: Counter[str]) -> bool:
    """Whether every wanted partition gets its own memory slices at an allowed start, with
    the compute slices to go round: tried slice by slice, from the first."""
    if sum(gpu.profiles[n].compute * k for n, k in wanted.items()) > gpu.compute:
        return False

    def place(index: int, left: Counter[str]) -> bool:
        if not +left:
            return True
        if index >= gpu.memory:
            return False
        for name in +left:
            slices = gpu.profiles[name]
            if index in slices.starts and index + slices.memory <= gpu.memory:
                rest = left.copy()
                rest[name] -= 1
                if place(index + slices.memory, rest):
                    return True
        return place(index + 1, left)  # memory slice `index` stays empty

    return place(0, wanted)


def driver_too_old(gpu_model: str, partition_types: Sequence[str], ami: str | None) -> bool:
    """Whether the image's driver cannot make one of these partitions (the endpoint then
    fails while provisioning)."""
    gpu = GPUS.get(gpu_model)
    if gpu is None or not gpu.newer_driver:
        return False
    driver = AMI_DRIVERS.get(ami) if ami else gpu.default_driver
    needed = [gpu.newer_driver.get(profile_name(t) or "", 0) for t in partition_types]
    return driver is None or driver < max(needed, default=0)
