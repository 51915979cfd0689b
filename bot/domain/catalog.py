"""The instance and price catalog, loaded from the JSON files beside this module.

The catalog guides; the live AWS APIs decide. Every price carries its source and date so a
quote can say where each figure came from.
"""

from __future__ import annotations

import difflib
import json
from datetime import date
from enum import StrEnum
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict


class PriceKind(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"
    SAGEMAKER_ON_DEMAND = "sagemaker-on-demand"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OfferingAvailability(_Frozen):
    offered: bool
    regions: tuple[str, ...]
    source: str


class InstanceType(_Frozen):
    instance_type: str
    accelerator: str  # "nvidia" or "trainium"
    gpu_model: str
    gpus: int  # GPUs (or Neuron devices) per instance
    gpu_memory_gib: int  # per GPU
    mig_family: str | None
    capacity_blocks: OfferingAvailability
    training_plans: OfferingAvailability
    sagemaker_name: str
    vcpus: int | None = None  # DescribeInstanceTypes VCpuInfo.DefaultVCpus, where recorded

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    def devices(self, n: int) -> str:
        """`n` of its accelerators in words: "1 whole GPU", "2 Trainium devices"."""
        noun = "Trainium device" if self.accelerator == "trainium" else "whole GPU"
        return f"{n} {noun}{'s' if n != 1 else ''}"


class CatalogPrice(_Frozen):
    kind: PriceKind
    instance_type: str
    region: str
    usd_per_hour: float
    source: str
    as_of: date
    estimate: bool

    def describe(self) -> str:
        label = " (estimate)" if self.estimate else ""
        return f"catalog: {self.source}, {self.region}, {self.as_of.isoformat()}{label}"


class _DerivedFactor(_Frozen):
    factor: float
    source: str


class UnknownInstanceType(ValueError):
    """An instance type the catalog does not know; `suggestions` are the closest names."""

    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; closest known: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f'unknown instance type "{name}"{hint}')


class Catalog:
    """Lookups over the bundled instance and price data."""

    def __init__(
        self,
        instances: list[InstanceType],
        prices: list[CatalogPrice],
        derived: dict[PriceKind, _DerivedFactor],
    ) -> None:
        self._instances = {i.instance_type: i for i in instances}
        self._prices = prices
        self._derived = derived

    @property
    def instance_types(self) -> list[str]:
        return sorted(self._instances)

    def instance(self, name: str) -> InstanceType:
        """The catalog entry for an EC2 or SageMaker (`ml.`) name, case-insensitive."""
        key = name.strip().lower().removeprefix("ml.")
        try:
            return self._instances[key]
        except KeyError:
            raise UnknownInstanceType(name, self.closest(key)) from None

    def capacity_block_regions(self) -> tuple[str, ...]:
        """Every region the catalog knows Capacity Blocks to be sold in, for any type."""
        regions = {
            region
            for entry in self._instances.values()
            if entry.capacity_blocks.offered
            for region in entry.capacity_blocks.regions
        }
        return tuple(sorted(regions))

    def closest(self, name: str, n: int = 3) -> list[str]:
        key = name.lower().removeprefix("ml.")
        return difflib.get_close_matches(key, self._instances, n=n, cutoff=0.5)

    def price(self, kind: PriceKind, instance_type: str, region: str) -> CatalogPrice | None:
        """The newest figure for this kind, type and region.

        Falls back to the same type in another region (newest first), then to a figure
        derived from On-Demand with the article's discount. `None` when nothing applies.
        """
        if not self._reservable(kind, instance_type):
            return None  # no block or plan is sold for it: there is no such price
        matches = [p for p in self._prices if p.kind == kind and p.instance_type == instance_type]
        same_region = [p for p in matches if p.region == region]
        pool = same_region or matches
        if pool:
            best = max(pool, key=lambda p: p.as_of)
            if best.region != region:
                # Another region's figure is only a guess for this one.
                return best.model_copy(
                    update={
                        "source": f"{best.source}; {best.region} figure, none for {region}",
                        "estimate": True,
                    }
                )
            return best
        factor = self._derived.get(kind)
        if factor is None:
            return None
        base = self.price(PriceKind.ON_DEMAND, instance_type, region)
        if base is None:
            return None
        return CatalogPrice(
            kind=kind,
            instance_type=instance_type,
            region=base.region,
            usd_per_hour=round(base.usd_per_hour * factor.factor, 4),
            source=f"{factor.source}; base {base.source}",
            as_of=base.as_of,
            estimate=True,
        )

    def _reservable(self, kind: PriceKind, instance_type: str) -> bool:
        entry = self._instances.get(instance_type)
        if entry is None:
            return True
        if kind is PriceKind.CAPACITY_BLOCK:
            return entry.capacity_blocks.offered
        if kind is PriceKind.TRAINING_PLAN:
            return entry.training_plans.offered
        return True


def _load_json(name: str) -> dict[str, object]:
    text = resources.files("bot.domain").joinpath("data", name).read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


@cache
def default_catalog() -> Catalog:
    inst = _load_json("instances.json")
    prices = _load_json("prices.json")
    derived_raw = prices["derived_factors"]
    assert isinstance(derived_raw, dict)
    instances_raw = inst["instances"]
    prices_raw = prices["prices"]
    assert isinstance(instances_raw, list) and isinstance(prices_raw, list)
    return Catalog(
        instances=[InstanceType.model_validate(i) for i in instances_raw],
        prices=[CatalogPrice.model_validate(p) for p in prices_raw],
        derived={PriceKind(k): _DerivedFactor.model_validate(v) for k, v in derived_raw.items()},
    )
