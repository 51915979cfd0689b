"""What operators count, as the rest of the bot reports it. The Prometheus adapter
(bot/adapters/metrics) implements it; tests and the shell may use `NoMetrics`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bot.domain.records import CapacityRecord


@dataclass(frozen=True)
class StoreCounts:
    """What the store holds now, read at scrape time (so every process reports the same
    numbers, and none has to keep them in step)."""

    requests: dict[str, int] = field(default_factory=dict)  # by state
    jobs_due: int = 0  # due now, not yet claimed
    jobs_scheduled: int = 0  # due now or later
    jobs_in_flight: int = 0  # claimed by a worker
    jobs_dead: int = 0  # given up on, kept for an operator
    oldest_due_seconds: float = 0.0  # how long the longest-waiting due job has waited


class Metrics(Protocol):
    def request_saved(self, old: CapacityRecord | None, new: CapacityRecord) -> None:
        """A request was created (`old` None) or changed, after the write succeeded."""
        ...

    def job_finished(self, kind: str, outcome: str) -> None:
        """outcome: ok, later (gave itself back), retry (failed), dead (buried)."""
        ...

    def external_call(self, service: str, operation: str, seconds: float, error: str) -> None:
        """A call to Slack or AWS took `seconds`; `error` is its error code, or "" if none."""
        ...

    def after_ack_depth(self, change: int) -> None:
        """Work queued or running after the ack went up or down by `change`."""
        ...


class NoMetrics:
    def request_saved(self, old: CapacityRecord | None, new: CapacityRecord) -> None:
        return None

    def job_finished(self, kind: str, outcome: str) -> None:
        return None

    def external_call(self, service: str, operation: str, seconds: float, error: str) -> None:
        return None

    def after_ack_depth(self, change: int) -> None:
        return None
