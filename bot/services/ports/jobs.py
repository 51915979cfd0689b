"""Scheduled work as the services see it: a job, a claimed job, and the queue holding them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol


@dataclass(frozen=True)
class Job:
    """A unit of scheduled work; `id` is unique per occurrence (e.g. "timeout:R12")."""

    id: str
    due: datetime
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimedJob:
    id: str
    payload: dict[str, Any]
    token: str


class JobQueue(Protocol):
    """Due jobs, claimed with a lease so a job whose worker dies comes back."""

    def schedule(self, job: Job) -> None: ...

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 10) -> list[ClaimedJob]: ...

    def ack(self, job: ClaimedJob) -> bool:
        """Done; False when the lease was lost (another worker owns the job now)."""
        ...

    def retry(self, job: ClaimedJob, due: datetime, payload: dict[str, Any]) -> bool:
        """Give the job back to run again at `due`."""
        ...

    def bury(self, job: ClaimedJob, error: str, at: datetime) -> None:
        """Give up on a job: keep it, with why, for operators."""
        ...

    def wake(self) -> None:
        """Tell a waiting worker (in any process) that a job is due now."""
        ...

    def wait_for_work(self, timeout: float) -> bool:
        """Block up to `timeout` seconds for a `wake`; True when woken."""
        ...
