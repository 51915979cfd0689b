"""The Redis store on a real Redis: compare-and-set, audit, jobs with leases."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from bot.adapters.store import RedisStore, open_store
from bot.domain.audit import AuditEntry
from bot.domain.decisions import Approval
from bot.domain.lifecycle import State
from bot.services.ports import Job, VersionConflict
from tests.factories import NOW, make_record


def audit(action: str, frm: State, to: State, actor: str = "U1") -> AuditEntry:
    return AuditEntry(
        request_id="R1",
        actor=actor,
        action=action,
        from_state=frm.value,
        to_state=to.value,
        at=NOW,
        usd=123.45,
    )


def test_create_and_read_back(redis_store: RedisStore) -> None:
    rec = make_record()
    stored = redis_store.create(rec, audit("created", State.DRAFT, State.DRAFT))
    assert stored.version == 1
    assert redis_store.get("R1") == stored
    assert redis_store.ids_in_state(State.DRAFT) == ["R1"]
    assert [r.id for r in redis_store.for_user("U0REQUESTER")] == ["R1"]


def test_a_users_requests_in_some_states_are_found_behind_many_newer_ones(
    redis_store: RedisStore,
) -> None:
    """App Home's live reservations: an old one behind 60 newer quotes is still found, and
    only the records in those states are read."""
    redis_store.create(
        make_record("R1", state=State.SCHEDULED), audit("x", State.DRAFT, State.DRAFT)
    )
    for n in range(2, 62):
        rec = make_record(f"R{n}", state=State.QUOTED)
        redis_store.create(rec, audit("x", State.DRAFT, State.DRAFT))
    redis_store.create(make_record("R62", state=State.ACTIVE), audit("x", State.DRAFT, State.DRAFT))
    read: list[str] = []
    get_many = redis_store.get_many
    redis_store.get_many = lambda ids: read.extend(ids) or get_many(ids)  # type: ignore[method-assign]
    live = (State.SCHEDULED, State.ACTIVE)
    assert [r.id for r in redis_store.for_user_in_states("U0REQUESTER", live)] == ["R62", "R1"]
    assert read == ["R62", "R1"]
    assert [r.id for r in redis_store.for_user_in_states("U0REQUESTER", live, limit=1)] == ["R62"]
    assert redis_store.for_user_in_states("U0NOBODY", live) == []


def both_ways(
    store: RedisStore, user: str, offset: int, limit: int | None
) -> tuple[list[str], int]:
    """waiting_for with the exclusion counts, and the same by walking the whole list: they
    must agree."""
    fast = store.waiting_for(user, offset, limit)
    marker = store.key("waiting", "counted")
    store.redis.delete(marker)
    slow = store.waiting_for(user, offset, limit)
    store.redis.set(marker, "1")
    assert fast == slow, (user, offset, limit)
    return fast


def test_what_waits_for_an_approver_is_paged_and_counted_inside_redis(
    redis_store: RedisStore,
) -> None:
    """More than one chunk of the script's read (500): each approver's page leaves out the
    requests they asked for or approved, and the count is of the rest; the per-user
    exclusion counts, built once for a list written before them and kept by every write
    after, give what walking the whole list gives."""
    records = {}
    for n in range(1, 1102):
        who = "U0A" if n % 2 else "U0B"
        rec = make_record(f"R{n}", state=State.PENDING_APPROVAL, requester=who)
        records[rec.id] = redis_store.create(rec, audit("x", State.DRAFT, State.PENDING_APPROVAL))
    # Written before the counts existed: the whole list is walked.
    assert redis_store.waiting_for("U0C", 0, 3) == (["R1", "R2", "R3"], 1101)
    assert redis_store.waiting_for("U0A", 0, 3) == (["R2", "R4", "R6"], 550)
    assert redis_store.waiting_for("U0B", 549, 5) == (["R1099", "R1101"], 551)
    page, total = redis_store.waiting_for("U0A")
    assert total == 550 and page == [f"R{n}" for n in range(2, 1102, 2)]
    assert redis_store.waiting_for("U0A", 0, 0) == ([], 550)
    assert redis_store.count_waiting_exclusions() == 1101
    assert redis_store.count_waiting_exclusions() == 0  # once
    assert both_ways(redis_store, "U0B", 549, 5) == (["R1099", "R1101"], 551)
    # Kept by later writes: a decided request leaves, an approval excludes its approver,
    # a new request is counted.
    for n in range(1, 11):
        old = records[f"R{n}"]
        redis_store.save(
            old,
            old.model_copy(update={"state": State.REJECTED}),
            audit("x", State.PENDING_APPROVAL, State.REJECTED),
        )
    old = records["R20"]
    approved = old.model_copy(
        update={"approvals": (Approval(user="U0C", at=NOW),), "required_approvals": 2}
    )
    redis_store.save(old, approved, audit("x", State.PENDING_APPROVAL, State.PENDING_APPROVAL))
    rec = make_record("R1102", state=State.PENDING_APPROVAL, requester="U0C")
    redis_store.create(rec, audit("x", State.DRAFT, State.PENDING_APPROVAL))
    for user in ("U0A", "U0B", "U0C", "U0D"):
        for offset, limit in ((0, 10), (5, 10), (540, 20), (1089, 10), (0, None)):
            both_ways(redis_store, user, offset, limit)
    assert both_ways(redis_store, "U0C", 0, 3) == (["R11", "R12", "R13"], 1090)
    assert both_ways(redis_store, "U0D", 0, 1) == (["R11"], 1092)


def test_create_twice_conflicts(redis_store: RedisStore) -> None:
    redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    with pytest.raises(VersionConflict, match=r"R1 is at version 1 \(draft\)"):
        redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    assert len(redis_store.audit("R1")) == 1


def test_a_write_that_schedules_a_job_wakes_a_waiting_worker_in_the_same_step(
    redis_store: RedisStore,
) -> None:
    v1 = redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    assert not redis_store.wait_for_work(0.05)  # nothing scheduled: nobody woken
    job = Job(id="quote:R1", kind="quote", due=NOW, payload={})
    redis_store.save(
        v1,
        v1.model_copy(update={"state": State.QUOTED}),
        audit("q", State.DRAFT, State.QUOTED),
        schedule=[job],
    )
    assert redis_store.wait_for_work(0.05)  # no separate wake() was called


def test_save_moves_state_index_and_writes_audit(redis_store: RedisStore) -> None:
    v1 = redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    v2 = redis_store.save(
        v1,
        v1.model_copy(update={"state": State.QUOTED}),
        audit("quoted", State.DRAFT, State.QUOTED),
    )
    assert v2.version == 2
    assert redis_store.ids_in_state(State.DRAFT) == []
    assert redis_store.ids_in_state(State.QUOTED) == ["R1"]
    entries = redis_store.audit("R1")
    assert [e.action for e in entries] == ["created", "quoted"]
    assert entries[1].usd == 123.45
    assert entries[1].from_state == "draft"
    assert [e.action for e in redis_store.audit()] == ["created", "quoted"]


def test_stale_save_is_refused_and_changes_nothing(redis_store: RedisStore) -> None:
    v1 = redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    redis_store.save(
        v1,
        v1.model_copy(update={"state": State.QUOTED}),
        audit("quoted", State.DRAFT, State.QUOTED),
    )
    with pytest.raises(VersionConflict) as info:
        redis_store.save(
            v1,
            v1.model_copy(update={"state": State.CANCELLED}),
            audit("cancelled", State.DRAFT, State.CANCELLED),
        )
    assert info.value.state == "quoted"
    assert redis_store.get("R1").state is State.QUOTED  # type: ignore[union-attr]
    assert len(redis_store.audit("R1")) == 2
    assert redis_store.ids_in_state(State.CANCELLED) == []


def test_twenty_concurrent_writers_one_wins(redis_store: RedisStore) -> None:
    v1 = redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    barrier = threading.Barrier(20)

    def attempt(i: int) -> bool:
        barrier.wait()
        try:
            redis_store.save(
                v1,
                v1.model_copy(update={"state": State.QUOTED, "reason": f"w{i}"}),
                audit("quoted", State.DRAFT, State.QUOTED, actor=f"U{i}"),
                schedule=[Job(id="purchase:R1", kind="purchase", due=NOW, payload={"by": i})],
            )
        except VersionConflict:
            return False
        return True

    with ThreadPoolExecutor(20) as pool:
        wins = list(pool.map(attempt, range(20)))
    assert wins.count(True) == 1
    assert len(redis_store.audit("R1")) == 2
    jobs = redis_store.claim_due(NOW + timedelta(seconds=1), lease=timedelta(minutes=1))
    assert [j.id for j in jobs] == ["purchase:R1"]


def test_jobs_are_claimed_once_and_acked(redis_store: RedisStore) -> None:
    for i in range(5):
        redis_store.schedule(
            Job(id=f"j{i}", kind="test", due=NOW + timedelta(minutes=i), payload={"i": i})
        )
    assert redis_store.claim_due(NOW - timedelta(seconds=1), lease=timedelta(minutes=5)) == []
    first = redis_store.claim_due(NOW + timedelta(minutes=2), lease=timedelta(minutes=5))
    assert [j.id for j in first] == ["j0", "j1", "j2"]
    # Claimed once: a second claim at the same moment gets none of them.
    assert redis_store.claim_due(NOW + timedelta(minutes=2), lease=timedelta(minutes=5)) == []
    assert all(redis_store.ack(j) for j in first)
    assert not redis_store.ack(first[0])  # acked already
    # Acked jobs are gone for good: even after their lease would have run out, only the
    # two that were never claimed come back.
    later = redis_store.claim_due(NOW + timedelta(minutes=30), lease=timedelta(minutes=5))
    assert [j.id for j in later] == ["j3", "j4"]


def test_concurrent_workers_never_share_a_job(redis_store: RedisStore) -> None:
    for i in range(200):
        redis_store.schedule(Job(id=f"j{i}", kind="test", due=NOW, payload={}))

    def worker(_: int) -> list[str]:
        got: list[str] = []
        while batch := redis_store.claim_due(NOW, lease=timedelta(minutes=5), limit=7):
            got += [j.id for j in batch]
        return got

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(worker, range(8)))
    claimed = [j for r in results for j in r]
    assert sorted(claimed) == sorted(f"j{i}" for i in range(200))


def test_a_dead_workers_lease_expires_and_the_job_comes_back(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="remind:R1", kind="remind", due=NOW, payload={"x": 1}))
    (dead,) = redis_store.claim_due(NOW, lease=timedelta(seconds=30))
    assert redis_store.claim_due(NOW + timedelta(seconds=29), lease=timedelta(seconds=30)) == []
    (again,) = redis_store.claim_due(NOW + timedelta(seconds=31), lease=timedelta(seconds=30))
    assert again.id == "remind:R1"
    assert again.payload == {"x": 1}
    assert not redis_store.ack(dead)  # the dead worker's late ack does not steal it
    assert redis_store.ack(again)


def test_cancelled_jobs_are_not_claimed(redis_store: RedisStore) -> None:
    v1 = redis_store.create(
        make_record(),
        audit("created", State.DRAFT, State.DRAFT),
        schedule=[Job(id="timeout:R1", kind="timeout", due=NOW, payload={})],
    )
    redis_store.save(
        v1,
        v1.model_copy(update={"state": State.CANCELLED}),
        audit("cancelled", State.DRAFT, State.CANCELLED),
        cancel=["timeout:R1"],
    )
    assert redis_store.claim_due(NOW + timedelta(hours=1), lease=timedelta(minutes=1)) == []


def test_memory_store_runs_the_same_scripts() -> None:
    store = open_store("memory://")
    v1 = store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    with pytest.raises(VersionConflict, match=r"R1 is at version 1 \(draft\)"):
        store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    store.save(
        v1,
        v1.model_copy(update={"state": State.QUOTED}),
        audit("quoted", State.DRAFT, State.QUOTED),
        schedule=[Job(id="j", kind="j", due=NOW, payload={})],
    )
    assert store.ids_in_state(State.QUOTED) == ["R1"]
    assert [j.id for j in store.claim_due(NOW, lease=timedelta(minutes=1))] == ["j"]


def test_a_delivery_is_marked(redis_store: RedisStore) -> None:
    assert not redis_store.delivered("told:R1:approved")
    redis_store.mark_delivered("told:R1:approved", NOW)
    assert redis_store.delivered("told:R1:approved")
    assert not redis_store.delivered("told:R1:rejected")


def test_delivery_keys_expire_and_the_audit_stays(redis_store: RedisStore) -> None:
    redis_store.mark_delivered("told:R1:approved", NOW)
    ttl = redis_store.redis.ttl(redis_store.key("delivered", "told:R1:approved"))
    assert timedelta(days=199) < timedelta(seconds=ttl) <= timedelta(days=200)
    redis_store.mark_delivered("told:R2:approved", NOW, keep=timedelta(seconds=1))
    assert redis_store.delivered("told:R2:approved")
    redis_store.redis.pexpire(redis_store.key("delivered", "told:R2:approved"), 1)
    time.sleep(0.01)
    assert not redis_store.delivered("told:R2:approved")
    redis_store.create(make_record(), audit("created", State.DRAFT, State.DRAFT))
    for stream in (redis_store.key("audit"), redis_store.key("audit", "R1")):
        assert redis_store.redis.ttl(stream) == -1  # the record: kept


def test_deliveries_marked_before_keys_expired_still_count(redis_store: RedisStore) -> None:
    redis_store.redis.hset(redis_store.key("delivered"), "told:R1:approved", NOW.isoformat())
    assert redis_store.delivered("told:R1:approved")


def test_a_job_scheduled_again_while_it_runs_runs_again_after(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="notify:R1", kind="notify", due=NOW, payload={"v": 1}))
    (running,) = redis_store.claim_due(NOW, lease=timedelta(minutes=5))
    redis_store.schedule(Job(id="notify:R1", kind="notify", due=NOW, payload={"v": 2}))
    # Not twice at once: the new occurrence waits while the first is in flight...
    assert redis_store.claim_due(NOW, lease=timedelta(minutes=5)) == []
    assert redis_store.ack(running)
    # ...and the ack keeps its payload for the next run.
    (again,) = redis_store.claim_due(NOW, lease=timedelta(minutes=5))
    assert again.payload == {"v": 2}


def test_a_failed_job_is_retried_later_with_its_new_payload(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="notify:R1", kind="notify", due=NOW, payload={}))
    (job,) = redis_store.claim_due(NOW, lease=timedelta(minutes=5))
    assert redis_store.retry(job, NOW + timedelta(seconds=30), attempt=1)
    assert redis_store.claim_due(NOW + timedelta(seconds=29), lease=timedelta(minutes=5)) == []
    (again,) = redis_store.claim_due(NOW + timedelta(seconds=30), lease=timedelta(minutes=5))
    assert (again.kind, again.payload, again.attempt) == ("notify", {}, 1)
    assert not redis_store.retry(job, NOW)  # the old lease is no longer good
    assert redis_store.retry(again, NOW + timedelta(minutes=1))  # attempt count unchanged
    (third,) = redis_store.claim_due(NOW + timedelta(minutes=1), lease=timedelta(minutes=5))
    assert third.attempt == 1


def test_a_retry_never_overwrites_a_newer_schedule_of_the_same_job(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="remind:R1", kind="remind", due=NOW, payload={"v": 1}))
    (running,) = redis_store.claim_due(NOW, lease=timedelta(minutes=5))
    # While it runs, the same job is scheduled anew (its reminder moved to a new time)...
    moved = NOW + timedelta(minutes=10)
    redis_store.schedule(Job(id="remind:R1", kind="remind", due=moved, payload={"v": 2}))
    # ...then the running occurrence fails and is given back for 30 s later.
    assert redis_store.retry(running, NOW + timedelta(seconds=30), attempt=1)
    assert redis_store.due_at("remind:R1") == moved
    assert redis_store.claim_due(moved - timedelta(seconds=1), lease=timedelta(minutes=5)) == []
    (newer,) = redis_store.claim_due(moved, lease=timedelta(minutes=5))
    assert (newer.payload, newer.attempt) == ({"v": 2}, 0)


def test_a_buried_job_is_kept_for_operators_and_not_run(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="notify:R1", kind="notify", due=NOW, payload={"request": "R1"}))
    (job,) = redis_store.claim_due(NOW, lease=timedelta(minutes=5))
    redis_store.bury(job, "SlackApiError: channel_not_found", NOW)
    assert redis_store.claim_due(NOW + timedelta(days=1), lease=timedelta(minutes=5)) == []
    dead = redis_store.dead_jobs()["notify:R1"]
    assert (dead["kind"], dead["payload"]) == ("notify", {"request": "R1"})
    assert "channel_not_found" in dead["error"]


def test_burying_needs_the_lease(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="notify:R1", kind="notify", due=NOW, payload={}))
    (stale,) = redis_store.claim_due(NOW, lease=timedelta(seconds=30))
    (owner,) = redis_store.claim_due(NOW + timedelta(minutes=1), lease=timedelta(seconds=30))
    assert not redis_store.bury(stale, "late", NOW)  # nothing written by a lost lease
    assert redis_store.dead_jobs() == {}
    assert redis_store.ack(owner)


def test_a_due_job_behind_many_in_flight_ones_is_claimed(redis_store: RedisStore) -> None:
    """The head of the due set is jobs scheduled again while they run; a due job behind
    them must still be found, whatever `limit` is."""
    for i in range(300):
        redis_store.schedule(Job(id=f"busy{i}", kind="test", due=NOW, payload={}))
    running = redis_store.claim_due(NOW, lease=timedelta(minutes=5), limit=300)
    assert len(running) == 300
    for i in range(300):  # each scheduled again while in flight, due at once
        redis_store.schedule(Job(id=f"busy{i}", kind="test", due=NOW, payload={}))
    redis_store.schedule(Job(id="waiting", kind="test", due=NOW + timedelta(seconds=1)))
    later = NOW + timedelta(seconds=2)
    assert [j.id for j in redis_store.claim_due(later, lease=timedelta(minutes=5), limit=1)] == [
        "waiting"
    ]
    assert redis_store.ack_many(running) == [True] * 300
    again = redis_store.claim_due(later, lease=timedelta(minutes=5), limit=1000)
    assert len(again) == 300  # the occurrences scheduled while they ran


def test_acks_in_one_call_report_each_lease(redis_store: RedisStore) -> None:
    for i in range(3):
        redis_store.schedule(Job(id=f"j{i}", kind="test", due=NOW, payload={}))
    jobs = redis_store.claim_due(NOW, lease=timedelta(seconds=30), limit=3)
    assert redis_store.ack(jobs[1])
    assert redis_store.ack_many(jobs) == [True, False, True]
    assert redis_store.claim_due(NOW + timedelta(hours=1), lease=timedelta(seconds=30)) == []


def test_a_lease_is_extended_only_by_its_owner(redis_store: RedisStore) -> None:
    redis_store.schedule(Job(id="long", kind="test", due=NOW, payload={}))
    (job,) = redis_store.claim_due(NOW, lease=timedelta(seconds=30))
    assert redis_store.extend_leases([job], NOW + timedelta(seconds=90)) == 1
    assert redis_store.claim_due(NOW + timedelta(seconds=60), lease=timedelta(seconds=30)) == []
    (taken,) = redis_store.claim_due(NOW + timedelta(seconds=91), lease=timedelta(seconds=30))
    # The first owner lost it: its heartbeat no longer moves the new owner's deadline.
    assert redis_store.extend_leases([job], NOW + timedelta(hours=1)) == 0
    later = NOW + timedelta(seconds=122)
    assert [j.id for j in redis_store.claim_due(later, lease=timedelta(seconds=30))] == ["long"]
    assert not redis_store.ack(taken)


def test_jobs_stored_before_they_carried_a_kind_still_run(redis_store: RedisStore) -> None:
    redis_store.redis.hset(redis_store.key("jobs"), "notify:R7", '{"request": "R7", "attempt": 2}')
    redis_store.redis.zadd(redis_store.key("due"), {"notify:R7": NOW.timestamp()})
    (job,) = redis_store.claim_due(NOW, lease=timedelta(seconds=30))
    assert (job.kind, job.payload, job.attempt) == ("notify", {"request": "R7"}, 2)


def test_many_jobs_are_scheduled_in_few_round_trips(redis_store: RedisStore) -> None:
    jobs = (Job(id=f"j{i}", kind="test", due=NOW, payload={"i": i}) for i in range(2500))
    assert redis_store.schedule_many(jobs, chunk=1000) == 2500
    claimed = redis_store.claim_due(NOW, lease=timedelta(minutes=1), limit=3000)
    assert sorted(j.payload["i"] for j in claimed) == list(range(2500))
