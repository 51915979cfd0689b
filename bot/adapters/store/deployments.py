"""Deployment records in Redis: the `Deployments` port (bot/services/ports/deployments.py).

Each record is one hash (`doc`, `version`) beside the request's keys, under the same hash
tag, so the compare-and-set (WATCH/MULTI) also writes the record's jobs into the job queue
in one transaction, as the request's own transitions do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import redis

from bot.adapters.store.base import epoch as _epoch
from bot.adapters.store.job_queue import encode_job as _encode
from bot.adapters.store.redis_store import RedisStore
from bot.domain.deployment.record import Deployment
from bot.services.ports import DeploymentConflict, Job


class RedisDeployments:
    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._redis = store.redis

    def _key(self, deployment_id: str) -> str:
        return self._store.key("dep", deployment_id)

    def next_deployment_id(self) -> str:
        return f"D{int(self._redis.incr(self._store.key('dep-seq')))}"

    def deployment(self, deployment_id: str) -> Deployment | None:
        doc = self._redis.hget(self._key(deployment_id), "doc")
        return Deployment.model_validate_json(doc) if doc else None

    def deployments_of(self, request_id: str) -> list[Deployment]:
        ids = cast(list[str], self._redis.zrange(self._store.key("dep-of", request_id), 0, -1))
        found = (self.deployment(i) for i in ids)
        return [d for d in found if d is not None]

    def save_deployment(
        self,
        old: Deployment | None,
        new: Deployment,
        schedule: Sequence[Job] = (),
        cancel: Sequence[str] = (),
    ) -> Deployment:
        key = self._key(new.id)
        expected = old.version if old is not None else 0
        stored = new.model_copy(update={"version": expected + 1})
        with self._redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)  # type: ignore[no-untyped-call]
                current = int(pipe.hget(key, "version") or 0)
                if current != expected:
                    raise DeploymentConflict(f"{new.id} is at version {current}")
                pipe.multi()
                pipe.hset(key, mapping={"doc": stored.model_dump_json(), "version": expected + 1})
                index = self._store.key("dep-of", new.request_id)
                pipe.zadd(index, {new.id: _epoch(new.created_at)})
                for job in schedule:
                    pipe.hset(self._store.key("jobs"), job.id, _encode(job.kind, job.payload))
                    pipe.zadd(self._store.key("due"), {job.id: _epoch(job.due)})
                for job_id in cancel:
                    pipe.zrem(self._store.key("due"), job_id)
                    pipe.hdel(self._store.key("jobs"), job_id)
                pipe.execute()
            except redis.WatchError as error:
                raise DeploymentConflict(f"{new.id} changed meanwhile") from error
        return stored
