"""Watches in Redis, beside the requests: each watch a hash (its document, its state,
the best offering it saw, the last match sent), the matches it sent, the questions it
asks. watch_create.lua, watch_match.lua and watch_retire.lua keep each step atomic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from bot.adapters.store.base import RedisBase, epoch
from bot.adapters.store.job_queue import encode_job
from bot.domain.audit import AuditEntry
from bot.domain.watch import (
    Question,
    Seen,
    Sent,
    Watch,
    WatchLimits,
    WatchState,
    watch_number,
)
from bot.services.ports import Job, WatchesFull


class RedisWatches:
    def __init__(self, base: RedisBase) -> None:
        self._b = base
        self.redis = base.redis

    def _k(self, *parts: str) -> str:
        return self._b.key(*parts)

    def next_watch_id(self) -> str:
        return f"W{int(self.redis.incr(self._k('watch-seq')))}"

    def create_watch(
        self,
        watch: Watch,
        asked: Sequence[tuple[Question, Job]],
        end: Job,
        limits: WatchLimits,
    ) -> int:
        args: list[str | float] = [
            watch.id,
            watch_number(watch.id),
            watch.model_dump_json(),
            watch.watcher,
            self._k("question", ""),
            len(asked),
            limits.per_person,
            limits.total,
        ]
        for question, job in asked:
            args += [
                question.key,
                question.model_dump_json(),
                job.id,
                epoch(job.due),
                encode_job(job.kind, job.payload),
            ]
        args += [end.id, epoch(end.due), encode_job(end.kind, end.payload)]
        keys = [
            self._k("watch", watch.id),
            self._k("watches"),
            self._k("watches-user", watch.watcher),
            self._k("watches-live"),
            self._k("questions"),
            self._k("questions-active"),
            self._k("due"),
            self._k("jobs"),
            self._k("wake"),
        ]
        scheduled, count = self._b._lua("watch_create.lua", keys, args)
        if int(scheduled) < 0:
            raise WatchesFull(per_person=int(scheduled) == -1, count=int(count))
        return int(scheduled)

    def search_turn(self, round_job: str, window: int, per_window: int) -> int:
        keys = [self._k("watch-turns"), self._k("watch-search-tail")]
        return int(self._b._lua("watch_slot.lua", keys, [round_job, window, per_window]))

    def get_watch(self, watch_id: str) -> Watch | None:
        found = self._read([watch_id])
        return found[0] if found else None

    def _read(self, ids: Sequence[str]) -> list[Watch]:
        pipe = self.redis.pipeline(transaction=False)
        for watch_id in ids:
            pipe.hmget(self._k("watch", watch_id), "doc", "state", "best", "note")
            pipe.lrange(self._k("watch-sent", watch_id), 0, -1)
        raw = pipe.execute()
        out: list[Watch] = []
        for i in range(0, len(raw), 2):
            doc, state, best, note = raw[i]
            if not doc:
                continue
            watch = Watch.model_validate_json(doc)
            out.append(
                watch.model_copy(
                    update={
                        "state": WatchState(state or watch.state),
                        "best_seen": Seen.model_validate_json(best) if best else None,
                        "ended_note": note or "",
                        "sent": tuple(Sent.model_validate_json(s) for s in raw[i + 1]),
                    }
                )
            )
        return out

    def watches(self, user: str | None = None, live_only: bool = False) -> list[Watch]:
        if live_only:
            ids = sorted(cast(set[str], self.redis.smembers(self._k("watches-live"))))
        else:
            index = self._k("watches-user", user) if user else self._k("watches")
            ids = cast(list[str], self.redis.zrange(index, 0, -1))
        found = self._read(ids)
        if user is not None:
            found = [w for w in found if w.watcher == user]
        return sorted(found, key=lambda w: watch_number(w.id), reverse=True)

    def question(self, key: str) -> Question | None:
        doc = self.redis.hget(self._k("questions"), key)
        return Question.model_validate_json(doc) if doc else None

    def asking(self, key: str) -> list[Watch]:
        ids = sorted(cast(set[str], self.redis.smembers(self._k("question", key))))
        return self._read(ids)

    def set_state(self, watch_id: str, state: WatchState, note: str, keys: Sequence[str]) -> bool:
        hash_key = self._k("watch", watch_id)
        question_keys = [self._k("question", key) for key in keys]
        script_keys = [hash_key, self._k("watches-live"), *question_keys]
        args = [state.value, note, watch_id]
        return bool(self._b._lua("watch_state.lua", script_keys, args))

    def schedule(self, job: Job) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self._k("jobs"), job.id, encode_job(job.kind, job.payload))
        pipe.zadd(self._k("due"), {job.id: epoch(job.due)})
        pipe.lpush(self._k("wake"), "1")  # a worker waiting for the next due job looks now
        pipe.ltrim(self._k("wake"), 0, 15)
        pipe.execute()

    def note_seen(self, watch_id: str, seen: Seen) -> None:
        self.redis.hset(self._k("watch", watch_id), "best", seen.model_dump_json())

    def record_match(
        self, watch_id: str, sent: Sent, margin: float, job: Job, audit: AuditEntry
    ) -> bool:
        fields = audit.fields()
        keys = [
            self._k("watch", watch_id),
            self._k("watch-sent-ids", watch_id),
            self._k("watch-sent", watch_id),
            self._k("due"),
            self._k("jobs"),
            self._k("wake"),
            self._k("audit"),
            self._k("audit", watch_id),
        ]
        args: list[str | float] = [
            sent.offering_id,
            sent.model_dump_json(),
            epoch(sent.start),
            sent.upfront_usd,
            margin,
            job.id,
            epoch(job.due),
            encode_job(job.kind, job.payload),
            len(fields) // 2,
            *fields,
        ]
        return bool(self._b._lua("watch_match.lua", keys, args))

    def retire_question(self, key: str, round_job: str) -> bool:
        keys = [
            self._k("question", key),
            self._k("questions-active"),
            self._k("questions"),
            self._k("watch-turns"),
        ]
        return bool(self._b._lua("watch_retire.lua", keys, [key, round_job]))

    def watch_audit(self, watch_id: str) -> list[AuditEntry]:
        entries = cast(
            list[tuple[str, dict[str, str]]], self.redis.xrange(self._k("audit", watch_id))
        )
        return [AuditEntry.from_fields(fields) for _id, fields in entries]

    def sent_count(self, watch_id: str) -> int:
        return int(self.redis.llen(self._k("watch-sent", watch_id)))
