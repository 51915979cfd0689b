"""Requests, their audit trail, scheduled jobs and caches, in Redis: the `Store` port
(bot/services/ports/store.py).

One implementation for `redis://` and `memory://` (fakeredis runs the same commands and
Lua scripts in-process). Every key of a namespace shares one hash tag, `{namespace}`, so
the scripts also run on Redis Cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any, cast

import redis

from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.domain.market import HourlyPrice
from bot.domain.records import CapacityRecord
from bot.services.ports import (
    ClaimedJob,
    DeliveryRecord,
    DeliveryStart,
    DeliveryState,
    Job,
    VersionConflict,
)


def _script(name: str) -> str:
    return resources.files("bot.adapters.store").joinpath("lua", name).read_text("utf-8")


def _encode(kind: str, payload: dict[str, Any], attempt: int = 0) -> str:
    return json.dumps({"kind": kind, "payload": payload, "attempt": attempt})


def _decode(job_id: str, raw: str, token: str) -> ClaimedJob:
    data = json.loads(raw)
    if "kind" not in data:
        # Written before jobs carried their kind: the payload itself, its kind the
        # id's first part, its failed attempts counted in the payload.
        attempt = int(data.pop("attempt", 0))
        return ClaimedJob(job_id, job_id.split(":", 1)[0], data, token, attempt)
    return ClaimedJob(job_id, data["kind"], data["payload"], token, int(data["attempt"]))


# How long a delivery key is kept: longer than anything can still be sent about one
# request (a reservation runs at most 182 days; reminders and cleanup follow its end).
DELIVERY_KEPT = timedelta(days=200)
# Given the old record (None on create) and the new one: jobs to schedule, ids to cancel.
Follower = Callable[[CapacityRecord | None, CapacityRecord], tuple[Sequence[Job], Sequence[str]]]
# Blocking reads stay under the client's 5 s socket timeout.
MAX_BLOCK_SECONDS = 4.0


def _epoch(when: datetime) -> float:
    return when.timestamp()


class RedisStore:
    def __init__(self, client: redis.Redis, namespace: str = "gpu") -> None:
        self.redis = client
        self.prefix = "{" + namespace + "}"
        self._transition = client.register_script(_script("transition.lua"))
        self._claim = client.register_script(_script("claim.lua"))
        self._release = client.register_script(_script("release.lua"))
        self._extend = client.register_script(_script("extend.lua"))
        self._begin_delivery = client.register_script(_script("begin_delivery.lua"))
        self._followers: list[Follower] = []

    def follow(self, follower: Follower) -> None:
        """Ask `follower` on every create and save which jobs the change calls for (the
        reminders follow their request); they are written in the same step."""
        self._followers.append(follower)

    def _followed(
        self,
        old: CapacityRecord | None,
        new: CapacityRecord,
        schedule: Sequence[Job],
        cancel: Sequence[str],
    ) -> tuple[list[Job], list[str]]:
        jobs, cancelled = list(schedule), list(cancel)
        for follower in self._followers:
            more, fewer = follower(old, new)
            jobs += more
            cancelled += [job for job in fewer if job not in {j.id for j in jobs}]
        return jobs, cancelled

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    def ping(self) -> bool:
        return bool(self.redis.ping())

    def first_sighting(self, key: str, seconds: int) -> bool:
        """True the first time `key` is seen in `seconds` (a replayed request: False)."""
        return bool(self.redis.set(self.key("seen", key), "1", nx=True, ex=seconds))

    # --- requests ---------------------------------------------------------------------

    def next_id(self) -> str:
        return f"R{int(self.redis.incr(self.key('seq')))}"

    def get(self, request_id: str) -> CapacityRecord | None:
        doc = self.redis.hget(self.key("req", request_id), "doc")
        return CapacityRecord.model_validate_json(doc) if doc else None

    def get_many(self, ids: Iterable[str]) -> list[CapacityRecord]:
        ids = list(ids)
        if not ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for request_id in ids:
            pipe.hget(self.key("req", request_id), "doc")
        return [CapacityRecord.model_validate_json(doc) for doc in pipe.execute() if doc]

    def create(
        self, record: CapacityRecord, audit: AuditEntry, schedule: Sequence[Job] = ()
    ) -> CapacityRecord:
        """Store a new record at version 1; `VersionConflict` if the id exists."""
        schedule, cancel = self._followed(None, record, schedule, ())
        return self._write(
            record,
            expected_version=0,
            old_state=record.state,
            audit=audit,
            schedule=schedule,
            cancel=cancel,
        )

    def save(
        self,
        old: CapacityRecord,
        new: CapacityRecord,
        audit: AuditEntry,
        schedule: Sequence[Job] = (),
        cancel: Sequence[str] = (),
    ) -> CapacityRecord:
        """Compare-and-set `new` over `old`: `VersionConflict` unless `old` is current.

        The audit entry and the job changes are written in the same step.
        """
        schedule, cancel = self._followed(old, new, schedule, cancel)
        return self._write(
            new,
            expected_version=old.version,
            old_state=old.state,
            audit=audit,
            schedule=schedule,
            cancel=cancel,
        )

    def _write(
        self,
        record: CapacityRecord,
        expected_version: int,
        old_state: State,
        audit: AuditEntry,
        schedule: Sequence[Job],
        cancel: Sequence[str],
    ) -> CapacityRecord:
        stored = record.model_copy(update={"version": expected_version + 1})
        audit_fields = audit.fields()
        args: list[Any] = [
            record.id,
            expected_version,
            record.state.value,
            stored.model_dump_json(),
            record.requester,
            _epoch(record.created_at),
            len(audit_fields) // 2,
            *audit_fields,
            len(schedule),
        ]
        for job in schedule:
            args += [job.id, _epoch(job.due), _encode(job.kind, job.payload)]
        args += [len(cancel), *cancel]
        keys = [
            self.key("req", record.id),
            self.key("audit"),
            self.key("audit", record.id),
            self.key("state", old_state.value),
            self.key("state", record.state.value),
            self.key("user", record.requester),
            self.key("due"),
            self.key("jobs"),
        ]
        ok, version, state = self._transition(keys=keys, args=args)
        if not ok:
            raise VersionConflict(record.id, int(version), str(state))
        return stored

    def ids_in_state(self, state: State) -> list[str]:
        members = cast(set[str], self.redis.smembers(self.key("state", state.value)))
        return sorted(members, key=_id_order)

    def in_state(self, state: State) -> list[CapacityRecord]:
        return self.get_many(self.ids_in_state(state))

    def for_user(self, user: str, limit: int = 20, offset: int = 0) -> list[CapacityRecord]:
        """The user's requests, newest id first, `limit` of them from `offset`. By id, not
        by the creation time the index is scored with: ids made in one second tie there
        and would list as text (R9 before R12 before R10)."""
        ids = cast(list[str], self.redis.zrange(self.key("user", user), 0, -1))
        ids.sort(key=_id_order, reverse=True)
        return self.get_many(ids[offset : offset + limit])

    def count_for_user(self, user: str) -> int:
        return int(self.redis.zcard(self.key("user", user)))

    def audit(
        self, request_id: str | None = None, limit: int = 100, newest: bool = False
    ) -> list[AuditEntry]:
        """Audit entries oldest first: the first `limit`, or with `newest` the last."""
        stream = self.key("audit", request_id) if request_id else self.key("audit")
        Entries = list[tuple[str, dict[str, str]]]
        if newest:
            entries = cast(Entries, self.redis.xrevrange(stream, count=limit))[::-1]
        else:
            entries = cast(Entries, self.redis.xrange(stream, count=limit))
        return [AuditEntry.from_fields(fields) for _id, fields in entries]

    # --- scheduled jobs ---------------------------------------------------------------

    def schedule(self, job: Job) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.key("jobs"), job.id, _encode(job.kind, job.payload))
        pipe.zadd(self.key("due"), {job.id: _epoch(job.due)})
        pipe.execute()

    def schedule_many(self, jobs: Iterable[Job], chunk: int = 1000) -> int:
        """`schedule` for many jobs, `chunk` per round trip (each chunk one transaction)."""
        count = 0
        pipe = self.redis.pipeline(transaction=True)
        for job in jobs:
            pipe.hset(self.key("jobs"), job.id, _encode(job.kind, job.payload))
            pipe.zadd(self.key("due"), {job.id: _epoch(job.due)})
            count += 1
            if count % chunk == 0:
                pipe.execute()
        pipe.execute()
        return count

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 10) -> list[ClaimedJob]:
        """Lease up to `limit` jobs due at `now` (oldest due first) until `now + lease`."""
        token = uuid.uuid4().hex
        flat = self._claim(
            keys=[self.key("due"), self.key("inflight"), self.key("jobs"), self.key("lease")],
            args=[_epoch(now), _epoch(now + lease), limit, token],
        )
        return [_decode(flat[i], flat[i + 1], token) for i in range(0, len(flat), 2)]

    def extend_leases(self, jobs: Sequence[ClaimedJob], until: datetime) -> int:
        """Move the lease deadline of jobs still held to `until`; how many were held."""
        if not jobs:
            return 0
        args: list[str | float] = [_epoch(until)]
        for job in jobs:
            args += [job.id, job.token]
        return int(self._extend(keys=[self.key("inflight"), self.key("lease")], args=args))

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
        return [bool(ok) for ok in self._release(keys=keys, args=args)]

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
        value = _encode(job.kind, job.payload, count)
        return self._release_many("retry", [(job, _epoch(due), value)])[0]

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

    # --- caches -----------------------------------------------------------------------

    def get_price(self, key: str) -> tuple[HourlyPrice, datetime] | None:
        raw = self.redis.get(self.key("price", key))
        if not raw:
            return None
        data = json.loads(raw)
        return HourlyPrice.model_validate(data["price"]), datetime.fromisoformat(data["at"])

    def put_price(self, key: str, price: HourlyPrice, ttl: timedelta) -> None:
        data = {"price": price.model_dump(mode="json"), "at": price.source.as_of.isoformat()}
        self.redis.set(self.key("price", key), json.dumps(data), px=int(ttl.total_seconds() * 1000))

    def cache_get(self, key: str) -> str | None:
        value = self.redis.get(self.key("cache", key))
        return str(value) if value is not None else None

    def cache_put(self, key: str, value: str, ttl: timedelta) -> None:
        self.redis.set(self.key("cache", key), value, px=int(ttl.total_seconds() * 1000))

    def delivered(self, key: str) -> bool:
        """Whether a message with this delivery key was sent (see `mark_delivered`)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(self.key("delivered", key))
        pipe.hexists(self.key("delivered"), key)  # marked before keys expired
        return any(pipe.execute())

    def mark_delivered(self, key: str, at: datetime, keep: timedelta = DELIVERY_KEPT) -> None:
        """Record a delivery for `keep` (then it is forgotten: the keys do not pile up)."""
        seconds = max(int(keep.total_seconds()), 1)
        self.redis.set(self.key("delivered", key), at.isoformat(), ex=seconds)

    # --- deliveries sent once (see bot/services/delivery.py) -------------------------

    def delivery(self, key: str) -> DeliveryRecord | None:
        raw = self.redis.get(self.key("delivery", key))
        return _delivery_record(str(raw)) if raw else None

    def record_delivery(self, key: str, record: DeliveryRecord) -> None:
        data = {
            "state": record.state.value,
            "channel": record.channel,
            "at": record.at.isoformat(),
            "ts": record.ts,
        }
        self.redis.set(
            self.key("delivery", key), json.dumps(data), ex=int(DELIVERY_KEPT.total_seconds())
        )

    def begin_delivery(
        self, key: str, channel: str, now: datetime, interval_s: float, looked: bool
    ) -> DeliveryStart:
        verdict, value = self._begin_delivery(
            keys=[self.key("delivery", key), self.key("pace", channel)],
            args=[
                int(now.timestamp() * 1000),
                max(int(interval_s * 1000), 1),
                channel,
                now.isoformat(),
                int(DELIVERY_KEPT.total_seconds()),
                "",
                "1" if looked else "0",
            ],
        )
        if verdict == "wait":
            return DeliveryStart("wait", wait_s=int(value) / 1000)
        if verdict in ("sent", "pending"):
            return DeliveryStart(verdict, record=_delivery_record(value))
        return DeliveryStart("go")


def _delivery_record(raw: str) -> DeliveryRecord:
    data = json.loads(raw)
    return DeliveryRecord(
        state=DeliveryState(data["state"]),
        channel=data["channel"],
        at=datetime.fromisoformat(data["at"]),
        ts=data.get("ts"),
    )


def _id_order(request_id: str) -> tuple[int, str]:
    digits = request_id.lstrip("R")
    return (int(digits), request_id) if digits.isdigit() else (0, request_id)
