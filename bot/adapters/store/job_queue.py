"""Scheduled jobs in Redis: a due-time sorted set, leases with tokens, a dead-letter hash.
claim.lua, release.lua, extend.lua and intake.lua keep each step atomic."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from bot.adapters.slack.inbound import REPLAY_WINDOW_SECONDS
from bot.adapters.store.base import RedisBase, epoch
from bot.services.ports import ClaimedJob, Intake, Job

# Blocking reads stay under the client's 5 s socket timeout.
MAX_BLOCK_SECONDS = 4.0


def encode_job(kind: str, payload: dict[str, Any], attempt: int = 0) -> str:
    return json.dumps({"kind": kind, "payload": payload, "attempt": attempt})


def _decode(job_id: str, raw: str, token: str) -> ClaimedJob:
    data = json.loads(raw)
    if "kind" not in data:
        # Written before jobs carried their kind: the payload itself, its kind the
        # id's first part, its failed attempts counted in the payload.
        attempt = int(data.pop("attempt", 0))
        return ClaimedJob(job_id, job_id.split(":", 1)[0], data, token, attempt)
    return ClaimedJob(job_id, data["kind"], data["payload"], token, int(data["attempt"]))


class JobQueueInRedis(RedisBase):
    def schedule(self, job: Job) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.key("jobs"), job.id, encode_job(job.kind, job.payload))
        pipe.zadd(self.key("due"), {job.id: epoch(job.due)})
        pipe.execute()

    def schedule_many(self, jobs: Iterable[Job], chunk: int = 1000) -> int:
        """`schedule` for many jobs, `chunk` per round trip (each chunk one transaction)."""
        count = 0
        pipe = self.redis.pipeline(transaction=True)
        for job in jobs:
            pipe.hset(self.key("jobs"), job.id, encode_job(job.kind, job.payload))
            pipe.zadd(self.key("due"), {job.id: epoch(job.due)})
            count += 1
            if count % chunk == 0:
                pipe.execute()
        pipe.execute()
        return count

    def schedule_once(
        self, items: Sequence[Intake], remember_seconds: int = REPLAY_WINDOW_SECONDS
    ) -> int:
        """Schedule each job unless its once-key was seen in the last `remember_seconds`
        (a replay), and wake a worker, in one round trip; how many were scheduled."""
        if not items:
            return 0
        args: list[Any] = [remember_seconds, self.key("once", "")]
        for item in items:
            job = item.job
            args += [item.once_key or "", job.id, epoch(job.due), encode_job(job.kind, job.payload)]
        keys = [self.key("due"), self.key("jobs"), self.key("wake")]
        return int(self._lua("intake.lua", keys, args))

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 10) -> list[ClaimedJob]:
        """Lease up to `limit` jobs due at `now` (oldest due first) until `now + lease`."""
        token = uuid.uuid4().hex
        flat = self._lua(
            "claim.lua",
            [self.key("due"), self.key("inflight"), self.key("jobs"), self.key("lease")],
            [epoch(now), epoch(now + lease), limit, token],
        )
        return [_decode(flat[i], flat[i + 1], token) for i in range(0, len(flat), 2)]

    def extend_leases(self, jobs: Sequence[ClaimedJob], until: datetime) -> int:
        """Move the lease deadline of jobs still held to `until`; how many were held."""
        if not jobs:
            return 0
        args: list[str | float] = [epoch(until)]
        for job in jobs:
            args += [job.id, job.token]
        return int(self._lua("extend.lua", [self.key("inflight"), self.key("lease")], args))

    def _release_many(
        self, action: str, items: Sequence[tuple[ClaimedJob, float, str]]
    ) -> list[bool]:
        if not items:
            return []
        keys = [
            self.key("inflight"),
            self.key("jobs"),
            self.key("lease"),
            self.key("due"),
            self.key("dead"),
        ]
        args: list[str | float] = [action]
        for job, score, value in items:
            args += [job.id, job.token, score, value]
        return [bool(ok) for ok in self._lua("release.lua", keys, args)]

    def ack(self, job: ClaimedJob) -> bool:
        """Done; False when the lease was lost (another worker owns the job now)."""
        return self._release_many("ack", [(job, 0, "")])[0]

    def ack_many(self, jobs: Sequence[ClaimedJob]) -> list[bool]:
        """`ack` for several jobs in one round trip."""
        return self._release_many("ack", [(job, 0, "") for job in jobs])

    def retry(self, job: ClaimedJob, due: datetime, attempt: int | None = None) -> bool:
        """Give the job back to run again at `due`, its payload unchanged; `attempt` is the
        new count of failed runs (None: unchanged, as when a handler asks to run later)."""
        count = job.attempt if attempt is None else attempt
        value = encode_job(job.kind, job.payload, count)
        return self._release_many("retry", [(job, epoch(due), value)])[0]

    def bury(self, job: ClaimedJob, error: str, at: datetime) -> bool:
        """Give up on a job: keep it, with why, in the dead-letter hash for operators
        (in the same step as releasing its lease; False when the lease was lost)."""
        record = json.dumps(
            {
                "kind": job.kind,
                "payload": job.payload,
                "attempt": job.attempt,
                "error": error,
                "at": at.isoformat(),
            }
        )
        return self._release_many("bury", [(job, 0, record)])[0]

    def next_due(self) -> tuple[str, datetime] | None:
        """The soonest scheduled job: its id and when it is due (None: nothing is)."""
        head = cast(
            list[tuple[str, float]], self.redis.zrange(self.key("due"), 0, 0, withscores=True)
        )
        return (str(head[0][0]), datetime.fromtimestamp(head[0][1], UTC)) if head else None

    def dead_jobs(self) -> dict[str, dict[str, Any]]:
        raw = cast(dict[str, str], self.redis.hgetall(self.key("dead")))
        return {job: json.loads(value) for job, value in raw.items()}

    def wake(self) -> None:
        """Tell a waiting worker (in any process) that a job is due now."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.lpush(self.key("wake"), "1")
        pipe.ltrim(self.key("wake"), 0, 15)
        pipe.execute()

    def wait_for_work(self, timeout: float) -> bool:
        """Block up to `timeout` seconds (at most 4, under the socket timeout) for a
        `wake`; True when woken."""
        wait = min(timeout, MAX_BLOCK_SECONDS)
        return self.redis.blpop([self.key("wake")], timeout=wait) is not None

    def due_at(self, job_id: str) -> datetime | None:
        score = self.redis.zscore(self.key("due"), job_id)
        return datetime.fromtimestamp(score, UTC) if score is not None else None
