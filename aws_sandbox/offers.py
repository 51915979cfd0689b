"""What the market offers, as values: enough to quote, to mint an offering id, and to buy
from that id alone."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

from aws_sandbox.offering_ids import BadOfferingId, pack, unpack
from aws_sandbox.times import from_epoch, to_epoch

TARGET_RESOURCES = ("training-job", "hyperpod-cluster", "endpoint", "studio-apps")


def upfront_fee(usd_per_hour: float, start: datetime, end: datetime, count: int) -> str:
    """Price x hours (to the minute) x instances, in cents, as AWS's UpfrontFee string."""
    minutes = Decimal(int((end - start).total_seconds()) // 60)
    fee = Decimal(str(usd_per_hour)) * minutes / 60 * count
    return str(fee.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def pick_zone(zones: tuple[str, ...], *key: object) -> str:
    """A zone chosen by `key`, the same in every process (unlike `hash`)."""
    digest = hashlib.sha256("|".join(map(str, key)).encode()).digest()
    return zones[int.from_bytes(digest[:4], "big") % len(zones)]


@dataclass(frozen=True)
class BlockOffer:
    """A Capacity Block offering."""

    PREFIX: ClassVar[str] = "cb-"

    instance_type: str
    zone: str
    count: int
    start: datetime
    end: datetime
    fee: str

    def offering_id(self) -> str:
        return pack(
            self.PREFIX,
            [
                self.instance_type,
                self.zone,
                self.count,
                to_epoch(self.start),
                to_epoch(self.end),
                self.fee,
            ],
        )

    @classmethod
    def from_offering_id(cls, offering_id: str) -> BlockOffer:
        kind, zone, count, start, end, fee = _typed(
            unpack(cls.PREFIX, offering_id), str, str, int, int, int, str
        )
        return cls(kind, zone, count, from_epoch(start), from_epoch(end), fee)


@dataclass(frozen=True)
class PlanPart:
    """One reserved capacity of a training plan: its own zone and window."""

    zone: str
    start: datetime
    end: datetime


@dataclass(frozen=True)
class PlanOffer:
    """A training plan offering: one or more consecutive parts of the same type and count."""

    PREFIX: ClassVar[str] = "tpo-"

    instance_type: str  # the EC2 name; SageMaker shows it with `ml.`
    count: int
    parts: tuple[PlanPart, ...]
    fee: str
    targets: tuple[str, ...]

    @property
    def start(self) -> datetime:
        return self.parts[0].start

    @property
    def end(self) -> datetime:
        return self.parts[-1].end

    def offering_id(self) -> str:
        parts = [[p.zone, to_epoch(p.start), to_epoch(p.end)] for p in self.parts]
        mask = sum(1 << TARGET_RESOURCES.index(t) for t in self.targets)
        return pack(self.PREFIX, [self.instance_type, self.count, parts, self.fee, mask])

    @classmethod
    def from_offering_id(cls, offering_id: str) -> PlanOffer:
        kind, count, raw_parts, fee, mask = _typed(
            unpack(cls.PREFIX, offering_id), str, int, list, str, int
        )
        parts = []
        for raw in raw_parts:
            zone, start, end = _typed(raw, str, int, int)
            parts.append(PlanPart(zone, from_epoch(start), from_epoch(end)))
        if not parts:
            raise BadOfferingId("no parts")
        targets = tuple(t for i, t in enumerate(TARGET_RESOURCES) if mask >> i & 1)
        return cls(kind, count, tuple(parts), fee, targets)


def _typed(values: Any, *types: type) -> list[Any]:
    """`values` if it is a list of exactly these types (bool is not an int here)."""
    if (
        not isinstance(values, list)
        or len(values) != len(types)
        or any(
            not isinstance(v, t) or (t is int and isinstance(v, bool))
            for v, t in zip(values, types, strict=True)
        )
    ):
        raise BadOfferingId("unexpected offering contents")
    return values
