"""Capacity requests in Redis: each record, its indexes by state and requester, and its
audit trail, written together by transition.lua in one compare-and-set."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, cast

from bot.adapters.store.base import RedisBase, epoch
from bot.adapters.store.job_queue import encode_job
from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.ports import Job, VersionConflict

log = logging.getLogger(__name__)
ID_FOR_SECONDS = 7 * 24 * 3600  # longer than any job is retried


class RequestsInRedis(RedisBase):
    def id_for(self, key: str) -> str:
        """A new id for `key` the first time, the same one for a week after."""
        keys = [self.key("id-for", key), self.key("seq")]
        return str(self._lua("id_for.lua", keys, [ID_FOR_SECONDS]))

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
        return self._write(
            record,
            expected_version=0,
            old_state=record.state,
            audit=audit,
            schedule=schedule,
            cancel=(),
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
            epoch(record.created_at),
            len(audit_fields) // 2,
            *audit_fields,
            len(schedule),
        ]
        for job in schedule:
            args += [job.id, epoch(job.due), encode_job(job.kind, job.payload)]
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
            self.key("wake"),
        ]
        ok, version, state = self._lua("transition.lua", keys, args)
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


def _id_order(request_id: str) -> tuple[int, str]:
    digits = request_id.lstrip("R")
    return (int(digits), request_id) if digits.isdigit() else (0, request_id)
