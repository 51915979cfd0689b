"""What the sandbox market sells, where, and at what price: its own world, read from
`data/world.json` (see that file's `_about` for where the figures come from)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

# The price kinds of the market's price list.
ON_DEMAND = "on-demand"
SAGEMAKER_ON_DEMAND = "sagemaker-on-demand"
SPOT = "spot"
CAPACITY_BLOCK = "capacity-block"
TRAINING_PLAN = "training-plan"


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    as_of: date


@dataclass(frozen=True)
class InstanceSpec:
    """One instance type as this market knows it."""

    instance_type: str  # the EC2 name
    sagemaker_name: str  # "ml." + the EC2 name
    accelerator: str  # "nvidia" or "trainium"
    accelerators: int  # GPUs or Neuron devices per instance
    gpu: str | None  # the GPU model whose MIG profiles apply; None: no MIG
    sold_in: tuple[str, ...]  # regions where EC2 sells it
    capacity_blocks_in: tuple[str, ...]  # regions with Capacity Block offerings
    training_plans_in: tuple[str, ...]  # regions with training plan offerings
    prices: dict[str, dict[str, Price]]  # kind -> region -> price

    def price(self, kind: str, region: str) -> Price | None:
        return self.prices.get(kind, {}).get(region)


class World:
    def __init__(self, specs: list[InstanceSpec]) -> None:
        self._by_name = {s.instance_type: s for s in specs}

    @property
    def instance_types(self) -> list[str]:
        return sorted(self._by_name)

    def spec(self, name: object) -> InstanceSpec | None:
        """The type of this exact EC2 name, or SageMaker (`ml.`) name; None if unknown."""
        text = str(name or "")
        if text.startswith("ml."):
            spec = self._by_name.get(text.removeprefix("ml."))
            return spec if spec is not None and spec.sagemaker_name == text else None
        return self._by_name.get(text)


def _spec(raw: dict[str, Any]) -> InstanceSpec:
    prices = {
        kind: {
            region: Price(float(usd), date.fromisoformat(entry["as_of"]))
            for region, usd in entry["usd_per_hour"].items()
        }
        for kind, entry in raw["prices"].items()
    }
    return InstanceSpec(
        instance_type=raw["instance_type"],
        sagemaker_name=raw["sagemaker_name"],
        accelerator=raw["accelerator"],
        accelerators=int(raw["accelerators"]),
        gpu=raw["gpu"],
        sold_in=tuple(raw["sold_in"]),
        capacity_blocks_in=tuple(raw["capacity_blocks_in"]),
        training_plans_in=tuple(raw["training_plans_in"]),
        prices=prices,
    )


@cache
def default_world() -> World:
    text = resources.files("aws_sandbox").joinpath("data", "world.json").read_text("utf-8")
    return World([_spec(raw) for raw in json.loads(text)["instance_types"]])


def zones_selling(spec: InstanceSpec, zones: tuple[str, ...]) -> tuple[str, ...]:
    """The Availability Zones of a region where EC2 sells this type On-Demand: every zone
    for G types; for the scarce P and Trn types (those sold as Capacity Blocks or training
    plans) every other zone from the second, as AWS offers them in some zones only (what
    DescribeInstanceTypeOfferings with LocationType availability-zone reports)."""
    scarce = bool(spec.capacity_blocks_in or spec.training_plans_in)
    return zones[1::2] or zones if scarce else zones
