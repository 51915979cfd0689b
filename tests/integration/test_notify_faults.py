"""An approval card posted by a worker process SIGKILLed before Slack's answer came: the
next worker finds the card by its delivery key instead of posting a second one, and
the card it found is the one updated when the request is decided."""

from __future__ import annotations

import signal
import subprocess
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis

from bot.app import build_services
from bot.config import load_settings
from bot.domain.audit import AuditEntry
from bot.domain.decisions import Rejection
from bot.domain.events import Rejected
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.changes import Change
from bot.services.jobs import notify_job
from bot.services.notifications import card_key
from tests.factories import make_record
from tests.integration.test_reminder_faults import settings_env, start_worker, wait_until
from tests.integration.test_slack_flow import action_ids
from tests.slack_fake import FakeSlack

CHANNEL = "C0APPROVALS"
APPROVER = "U0APPROVER"


@pytest.mark.long
def test_a_card_posted_by_a_killed_worker_is_found_and_updated_not_posted_again(
    redis_url: str,
) -> None:
    fake = FakeSlack()
    fake.latency_s = 5.0  # Slack posts at once and answers late: the kill lands in between
    namespace = f"notify-faults-{uuid.uuid4().hex[:8]}"
    env = settings_env(redis_url, namespace, fake)
    services = build_services(load_settings(**env))
    now = datetime.now(UTC)
    record = make_record(
        "R1",
        state=State.PENDING_APPROVAL,
        created_at=now,
        updated_at=now,
        approval_deadline=now + timedelta(days=1),
    )
    audit = AuditEntry("R1", "U0REQUESTER", "submitted", "quoted", "pending_approval", now)
    services.store.create(record, audit, schedule=[notify_job("R1", now)])
    workers = [start_worker(env)]
    try:
        assert wait_until(lambda: len(fake.messages.get(CHANNEL, [])) == 1, 30)
        workers[0].send_signal(signal.SIGKILL)  # posted; the answer had not come
        workers[0].wait(timeout=10)
        fake.latency_s = 0.0
        workers.append(start_worker(env))
        assert wait_until(lambda: services.store.get("R1").approval_message is not None, 30)  # type: ignore[union-attr]

        def rejected(r: CapacityRecord) -> Change:
            rejection = Rejection(user=APPROVER, at=datetime.now(UTC), reason="not now")
            new = r.model_copy(update={"state": State.REJECTED, "rejection": rejection})
            return Change(new, Rejected(), "rejected", APPROVER)

        services.changes.apply("R1", rejected)
        services.store.wake()
        told = lambda: fake.messages.get("D0REQUESTER", [])  # noqa: E731
        updated = lambda: [u for u in fake.of("chat.update") if not action_ids(u.blocks())]  # noqa: E731
        assert wait_until(lambda: bool(told()) and bool(updated()), 30)
        # A late duplicate could come only from a notify job still stored (in flight with
        # a worker, or given back to run again): once none is, the count below is final.
        jobs = services.store.key("jobs")
        job_id = notify_job("R1", now).id
        assert wait_until(lambda: not services.store.redis.hexists(jobs, job_id), 30)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
        fake.close()
    (card,) = fake.messages[CHANNEL]
    assert fake.delivery_keys().count(card_key("R1")) == 1
    assert fake.of("conversations.history")  # resolved by looking, not by posting again
    found = services.store.get("R1")
    assert found is not None and found.approval_message is not None
    assert found.approval_message.ts == card["ts"]
    updates = fake.of("chat.update")
    assert {u.args["ts"] for u in updates} == {card["ts"]}
    assert action_ids(updates[-1].blocks()) == []  # decided: its buttons are gone
    assert len(told()) == 1 and "was rejected" in str(told()[0]["text"])
    assert [e.action for e in services.store.audit("R1")].count("posted") == 1
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match="{" + namespace + "}*"))
    if keys:
        client.delete(*keys)
