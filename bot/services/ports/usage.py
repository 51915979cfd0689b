"""How many instances run in what was bought, as the sampling round sees it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.domain.sampling import Sample


class Measure(StrEnum):
    CAPACITY_RESERVATION = "capacity-reservation"  # a Capacity Block or an ODCR: total - available
    TRAINING_PLAN = "training-plan"  # SageMaker's in-use count
    TAGGED = "tagged"  # On-Demand or Spot: running instances tagged gpu-bot:request-id


@dataclass(frozen=True)
class Target:
    """One thing to count: `id` is a reservation id, a plan ARN or a request id (TAGGED)."""

    account: str | None  # None: the bot's own
    region: str
    measure: Measure
    id: str


class UsageMeter(Protocol):
    def running(self, targets: Sequence[Target]) -> dict[Target, int]:
        """How many instances run in each target now, in as few calls as AWS allows. A
        target missing from the answer could not be counted this time (not sampled)."""
        ...


class UsageSamples(Protocol):
    def add_samples(self, samples: Mapping[str, Sample], keep: int) -> None:
        """Append one sample per request id, keeping each request's newest `keep`."""
        ...

    def samples(self, request_id: str) -> list[Sample]:
        """The request's kept samples, oldest first."""
        ...
