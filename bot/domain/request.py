"""A capacity request: what a team asks for, before anything is compared or bought.

`RequestDraft` is what the grammar or a form produces; any field may be missing.
`CapacityRequest` is a complete request that the comparison can price.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, field_validator


class Environment(StrEnum):
    EC2 = "ec2"
    SAGEMAKER = "sagemaker"


class Workload(StrEnum):
    TRAINING = "training"
    INFERENCE = "inference"
    EVALUATION = "evaluation"
    EVENT = "event"


MAX_COUNT = 1024
MAX_DURATION_HOURS = 365 * 24
MAX_REASON_CHARS = 500
# The one rule about the reason, said in these words wherever the reason is asked for:
# comparing needs none, submitting does.
REASON_NEEDED = "A request goes to the approvers only with a reason for them"


def clean_text(raw: str) -> str:
    """User text as one line: control and format characters (NUL, newlines, zero-width
    and direction marks) become spaces, runs of spaces one. A reason made only of such
    characters is empty, so "give a reason" still asks for one."""
    kept = "".join(" " if unicodedata.category(ch)[0] in "CZ" else ch for ch in raw)
    return " ".join(kept.split())


# Field names as users see them, in the order forms and messages list them.
REQUIRED_FIELDS = ("count", "instance_type", "duration", "start")


class IncompleteRequest(ValueError):
    """A draft lacks fields the comparison needs; `missing` names them."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__("missing " + ", ".join(missing))


# `region=any`: every region where the type is sold and a block or plan may be.
ANY_REGION = "any"


def searched_regions(region: str) -> tuple[str, ...] | None:
    """The regions a `region` value asks to search: None for one region, () for any."""
    if region == ANY_REGION:
        return ()
    if "," in region:
        return tuple(dict.fromkeys(r.strip() for r in region.split(",") if r.strip()))
    return None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("start must carry a time zone")
    return value.astimezone(UTC)


class RequestDraft(_Frozen):
    """Whatever is known of a request so far. `None` means "not given"."""

    count: int | None = None
    instance_type: str | None = None  # EC2 name, without the "ml." prefix
    duration_hours: int | None = None
    start: datetime | None = None  # aware, UTC
    region: str | None = None
    environment: Environment | None = None
    workload: Workload | None = None
    interruptible: bool = False
    utilization_pct: int | None = None  # 1..100
    reason: str | None = None
    account: str | None = None  # a name from GPU_BOT_ACCOUNTS; None: the default account

    _start_utc = field_validator("start")(_utc)

    def missing(self) -> list[str]:
        given = {
            "count": self.count,
            "instance_type": self.instance_type,
            "duration": self.duration_hours,
            "start": self.start,
        }
        return [name for name in REQUIRED_FIELDS if given[name] is None]

    def complete(self, default_region: str) -> CapacityRequest:
        """The full request, or `IncompleteRequest` naming what is missing."""
        missing = self.missing()
        if missing:
            raise IncompleteRequest(missing)
        assert self.count is not None and self.instance_type is not None
        assert self.duration_hours is not None and self.start is not None
        return CapacityRequest(
            count=self.count,
            instance_type=self.instance_type,
            duration_hours=self.duration_hours,
            start=self.start,
            region=self.region or default_region,
            environment=self.environment,
            workload=self.workload or Workload.TRAINING,
            interruptible=self.interruptible,
            utilization_pct=self.utilization_pct or 100,
            utilization_given=self.utilization_pct is not None,
            reason=self.reason or "",
            account=self.account,
        )


class CapacityRequest(_Frozen):
    """A complete request. `environment=None` means either EC2 or SageMaker will do."""

    count: int
    instance_type: str
    duration_hours: int
    start: datetime
    region: str
    environment: Environment | None = None
    workload: Workload = Workload.TRAINING
    interruptible: bool = False
    utilization_pct: int = 100
    reason: str = ""
    account: str | None = None  # a name from GPU_BOT_ACCOUNTS; None: the default account
    # False when the request said no util= (100% was assumed): the quote may use the
    # team's measured utilisation instead (bot.domain.learning).
    utilization_given: bool = True

    _start_utc = field_validator("start")(_utc)

    @property
    def end(self) -> datetime:
        return self.start + timedelta(hours=self.duration_hours)

    @property
    def utilization(self) -> float:
        return self.utilization_pct / 100

    @property
    def instance_hours(self) -> int:
        return self.count * self.duration_hours

    def draft(self) -> RequestDraft:
        return RequestDraft(**self.model_dump(exclude={"utilization_given"}))
