"""Scheduled work as the services see it: a job, a claimed job, and the queue holding them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol


@dataclass(frozen=True)
class Job:
    """A unit of scheduled work of one kind; `id` is unique per occurrence (e.g.
    "timeout:R12"); `payload` is the kind's payload model dumped to JSON types. Made by
    `JobKind.job` (bot/services/jobs.py)."""

    id: str
    kind: str
    due: datetime
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimedJob:
    """A job this worker holds a lease on (`token` proves it); `attempt` counts the
    failed runs before this one."""

    id: str
    kind: str
    payload: dict[str, Any]
    token: str
    attempt: int = 0


@dataclass(frozen=True)
class Intake:
    """A job handed in while answering Slack, stored once per delivery: a `once_key`
    (the Slack request's signature) seen before is a replay, and its job is dropped."""

    job: Job
    once_key: str | None = None


class JobIntake(Protocol):
    """Where listeners hand in jobs without waiting for Redis: `put` only queues; the
    jobs are stored shortly after, many per round trip (see `AfterAck.lane`). A failure
    to store reaches `on_error`."""

    def put(self, item: Intake, on_error: Callable[[Exception], object] | None = None) -> None: ...


class JobQueue(Protocol):
    """Due jobs, claimed with a lease so a job whose worker dies comes back. Releasing
    a lease (ack, retry, bury) or extending it needs the claim's token: a worker whose
    lease ran out cannot touch the job's new owner."""

    def schedule(self, job: Job) -> None: ...

    def schedule_many(self, jobs: Iterable[Job], chunk: int = 1000) -> int:
        """`schedule` for many jobs, in few round trips; how many were scheduled."""
        ...

    def schedule_once(self, items: Sequence[Intake]) -> int:
        """Schedule each job unless its `once_key` was seen within the replay window,
        and wake a worker, in one round trip; how many were scheduled."""
        ...

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 10) -> list[ClaimedJob]:
        """Lease up to `limit` jobs due at `now`, oldest first, until `now + lease`."""
        ...

    def ack(self, job: ClaimedJob) -> bool:
        """Done; False when the lease was lost (another worker owns the job now)."""
        ...

    def ack_many(self, jobs: Sequence[ClaimedJob]) -> list[bool]:
        """`ack` for several jobs in one step."""
        ...

    def retry(self, job: ClaimedJob, due: datetime, attempt: int | None = None) -> bool:
        """Give the job back to run again at `due`; `attempt` is the new count of failed
        runs (None: unchanged)."""
        ...

    def bury(self, job: ClaimedJob, error: str, at: datetime) -> bool:
        """Give up on a job: keep it, with why, for operators (in the same step as
        releasing its lease)."""
        ...

    def extend_leases(self, jobs: Sequence[ClaimedJob], until: datetime) -> int:
        """Move the lease deadline of jobs still held to `until`; how many were held."""
        ...

    def wake(self) -> None:
        """Tell a waiting worker (in any process) that a job is due now."""
        ...

    def wait_for_work(self, timeout: float) -> bool:
        """Block up to `timeout` seconds for a `wake`; True when woken."""
        ...
