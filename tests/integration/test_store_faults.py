"""Faults on a throwaway redis-server: a crash and restart with AOF loses nothing due."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis
from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.services.ports import Job
from tests.conftest import start_redis_server
from tests.factories import NOW, make_record

pytestmark = pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server")


def test_jobs_and_records_survive_a_redis_crash_with_aof() -> None:
    aof = ("--appendonly", "yes", "--appendfsync", "always")
    proc, url, port, workdir = start_redis_server(*aof)
    try:
        store = RedisStore(open_redis(url), namespace="gpu")
        store.create(
            make_record(),
            AuditEntry(
                request_id="R1",
                actor="U1",
                action="created",
                from_state="draft",
                to_state="draft",
                at=NOW,
            ),
            schedule=[Job(id="remind:R1:start", kind="remind", due=NOW, payload={"r": "R1"})],
        )
        store.schedule(
            Job(id="remind:R1:end", kind="remind", due=NOW + timedelta(hours=1), payload={})
        )
        (claimed,) = store.claim_due(NOW, lease=timedelta(seconds=30))  # worker then dies
        proc.kill()  # SIGKILL: no clean shutdown
        proc.wait(timeout=10)

        proc, url, _port, _dir = start_redis_server(*aof, port=port, workdir=workdir)
        store = RedisStore(open_redis(url), namespace="gpu")
        assert store.get("R1") is not None
        assert store.ids_in_state(State.DRAFT) == ["R1"]
        # The in-flight job comes back once its lease runs out; the later one is still due.
        later = NOW + timedelta(hours=2)
        ids = sorted(j.id for j in store.claim_due(later, lease=timedelta(seconds=30)))
        assert ids == ["remind:R1:end", "remind:R1:start"]
        assert claimed.id == "remind:R1:start"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
