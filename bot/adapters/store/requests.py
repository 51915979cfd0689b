"""Capacity requests in Redis: each record, its indexes by state and requester, its audit
trail, and what the ledger keeps beside it (team-month totals, spend rows, the waiting
list, closed reservations: bot/adapters/store/money.py reads them), written together by
transition.lua in one compare-and-set."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from bot.adapters.store.base import RedisBase, epoch
from bot.adapters.store.job_queue import encode_job
from bot.adapters.store.money import projection_args
from bot.domain.audit import AuditEntry
from bot.domain.ledger import settle
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.ports import BudgetMoved, Job, VersionConflict

log = logging.getLogger(__name__)
ID_FOR_SECONDS = 7 * 24 * 3600  # longer than any job is retried
# Raised when what transition.lua keeps beside a record changes shape: records written
# before are indexed again (each keeps its projection, so totals move by the difference).
LEDGER_VERSION = "1"
INDEX_BATCH = 500


class RequestsInRedis(RedisBase):
    def id_for(self, key: str) -> str:
        """A new id for `key` the first time, the same one for a week after."""
        keys = [self.key("id-for", key), self.key("seq")]
        return str(self._lua("id_for.lua", keys, [ID_FOR_SECONDS]))

    def get(self, request_id: str) -> CapacityRecord | None:
        doc = self.redis.hget(self.key("req", request_id), "doc")
        return CapacityRecord.model_validate_json(doc) if doc else None

    def get_many(self, ids: Iterable[str]) -> list[CapacityRecord]:
        """The records of `ids` that exist, in the order given."""
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
        budget_guard: int | None = None,
    ) -> CapacityRecord:
        """Compare-and-set `new` over `old`: `VersionConflict` unless `old` is current,
        `BudgetMoved` when the team-month's held and paid would pass `budget_guard`.

        The audit entry, the job changes and the ledger's projection are written in the
        same step.
        """
        return self._write(
            new,
            expected_version=old.version,
            old_state=old.state,
            audit=audit,
            schedule=schedule,
            cancel=cancel,
            budget_guard=budget_guard,
        )

    def _write(
        self,
        record: CapacityRecord,
        expected_version: int,
        old_state: State,
        audit: AuditEntry | None,
        schedule: Sequence[Job],
        cancel: Sequence[str],
        budget_guard: int | None = None,
    ) -> CapacityRecord:
        stored = record.model_copy(update={"version": expected_version + 1})
        audit_fields = audit.fields() if audit is not None else []
        args: list[Any] = [
            record.id,
            expected_version,
            record.state.value,
            stored.model_dump_json(exclude_defaults=True),
            record.requester,
            id_order(record.id)[0],
            self.prefix,
            *projection_args(record, id_order(record.id)[0]),
            "" if budget_guard is None else budget_guard,
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
            self.key("waiting"),
            self.key("waiting", "who"),
            self.key("waiting", "excluded"),
        ]
        ok, version, state = self._lua("transition.lua", keys, args)
        if not ok:
            if state == "over-budget":
                raise BudgetMoved(record.id, int(version), str(state))
            raise VersionConflict(record.id, int(version), str(state))
        return stored

    def index_ledger(self, now: datetime) -> int:
        """Settle and index every record written before the ledger (no projection kept
        beside it): its money entries, the team-month totals, spend rows, the waiting list,
        the closed reservations and the requester index. Idempotent and safe beside live
        writers (each record is a compare-and-set); a marker makes later starts skip the
        scan. Returns how many records were indexed."""
        marker = self.key("ledger", "version")
        if self.redis.get(marker) == LEDGER_VERSION:
            return 0
        # Every request is in the set of its state: no scan of the whole keyspace.
        ids = [i for state in State for i in self.ids_in_state(state)]
        indexed = 0
        for start in range(0, len(ids), INDEX_BATCH):
            batch = [self.key("req", i) for i in ids[start : start + INDEX_BATCH]]
            indexed += self._index_batch(batch, now)
        seen = len(ids)
        self.redis.set(marker, LEDGER_VERSION)
        log.info("ledger: %d of %d records indexed (the rest were already)", indexed, seen)
        return indexed

    def _index_batch(self, keys: list[str], now: datetime) -> int:
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, "doc", "proj")
        indexed = 0
        for doc, proj in cast(list[list[str | None]], pipe.execute()):
            if doc is None or proj is not None:
                continue  # written with its projection already
            record = CapacityRecord.model_validate_json(doc)
            for _ in range(3):
                try:
                    self._write(
                        settle(record, now, "indexed"), record.version, record.state, None, (), ()
                    )
                    indexed += 1
                    break
                except VersionConflict:
                    fresh = self.redis.hmget(self.key("req", record.id), "doc", "proj")
                    if fresh[0] is None or fresh[1] is not None:
                        break  # a live writer indexed it meanwhile
                    record = CapacityRecord.model_validate_json(fresh[0])
        return indexed

    def ids_in_state(self, state: State) -> list[str]:
        members = cast(set[str], self.redis.smembers(self.key("state", state.value)))
        return sorted(members, key=id_order)

    def in_state(self, state: State) -> list[CapacityRecord]:
        return self.get_many(self.ids_in_state(state))

    def for_user(self, user: str, limit: int = 20, offset: int = 0) -> list[CapacityRecord]:
        """The user's requests, newest id first, `limit` of them from `offset` (the index
        is scored by the id's number, so a page is read without the rest)."""
        key = self.key("user", user)
        ids = cast(list[str], self.redis.zrevrange(key, offset, offset + limit - 1))
        return self.get_many(ids)

    def for_user_in_states(
        self, user: str, states: Iterable[State], limit: int = 50
    ) -> list[CapacityRecord]:
        """The user's newest `limit` requests in `states`: their ids are checked against
        the state sets in Redis (ids only, one round trip) and only those records are read
        (App Home's live reservations, without parsing a long history of ended ones)."""
        ids = cast(list[str], self.redis.zrevrange(self.key("user", user), 0, -1))
        if not ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for state in states:
            pipe.smismember(self.key("state", state.value), ids)
        found = [any(flags) for flags in zip(*pipe.execute(), strict=True)]
        return self.get_many([i for i, yes in zip(ids, found, strict=True) if yes][:limit])

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


def id_order(request_id: str) -> tuple[int, str]:
    digits = request_id.lstrip("R")
    return (int(digits), request_id) if digits.isdigit() else (0, request_id)
