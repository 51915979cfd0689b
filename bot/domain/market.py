"""What the market says for one request: prices and reserved offerings, with their sources.

Adapters (live AWS, the sandbox, a cache) fill a `MarketSnapshot`; the comparison reads it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Origin(StrEnum):
    LIVE = "live"  # an AWS API answered just now
    CACHE = "cache"  # an AWS API answered earlier; see age
    SANDBOX = "sandbox"  # the simulated market answered
    CATALOG = "catalog"  # the bundled price catalog


class PriceSource(_Frozen):
    origin: Origin
    detail: str  # API name, or the catalog entry's source and date
    as_of: datetime
    estimate: bool = False
    age_seconds: int | None = None  # for cached figures

    def describe(self) -> str:
        text = f"{self.origin.value}: {self.detail}"
        if self.age_seconds is not None:
            text += f" (cached {_age(self.age_seconds)} ago)"
        if self.estimate:
            text += " (estimate)"
        return text


def _age(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


class HourlyPrice(_Frozen):
    """USD per instance-hour."""

    usd_per_hour: float
    source: PriceSource
    zone: str | None = None  # Spot prices are per Availability Zone


class ReservationKind(StrEnum):
    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"

    @property
    def label(self) -> str:
        """As people read it: "Capacity Block", "training plan"."""
        return "Capacity Block" if self is ReservationKind.CAPACITY_BLOCK else "training plan"


class OfferingPart(_Frozen):
    """One reserved piece; a training plan offering can come in several parts."""

    instance_type: str
    count: int
    zone: str | None
    start: datetime
    end: datetime


class Offering(_Frozen):
    kind: ReservationKind
    offering_id: str
    instance_type: str
    count: int
    start: datetime
    end: datetime
    duration_hours: float
    upfront_usd: float
    currency: str = "USD"
    zone: str | None = None
    zone_type: str | None = None  # EC2's ZoneType: availability-zone, local-zone, ...
    parts: tuple[OfferingPart, ...] = ()
    source: PriceSource

    @property
    def hourly_usd(self) -> float:
        """Upfront fee spread over every reserved instance-hour."""
        return self.upfront_usd / (self.count * self.duration_hours)


class MarketSnapshot(_Frozen):
    """Everything the comparison needs for one request. Missing pieces carry an error."""

    on_demand: HourlyPrice | None = None
    sagemaker_on_demand: HourlyPrice | None = None
    spot: HourlyPrice | None = None
    capacity_blocks: tuple[Offering, ...] = ()
    training_plans: tuple[Offering, ...] = ()
    # What could not be fetched, by source name ("capacity-block", "spot", ...): the reason.
    errors: dict[str, str] = {}
    # What was left out of an answer that otherwise came back, by source name: one line each
    # (an offering without a fee, a fee in another currency, a zone the account cannot use).
    notes: dict[str, tuple[str, ...]] = {}
    # The offering searches AWS answered ("capacity-block", "training-plan"): what the
    # capacity outlook remembers (a search not made, or failed, saw nothing either way).
    searched: tuple[str, ...] = ()
