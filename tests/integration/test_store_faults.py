"""Faults on a throwaway redis-server: a crash and restart with AOF loses nothing due;
a store killed in the middle of a purchase leaves nothing approved to a person and
buys nothing twice."""

from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from typing import Any

import pytest
import redis

from aws_sandbox import AnswerFault
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis
from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.audit import AuditEntry
from bot.domain.buy_once import ATTEMPT_LEASE
from bot.domain.lifecycle import State
from bot.front import UNAVAILABLE
from bot.services.ports import Job
from tests import slack_payloads as payloads
from tests.conftest import start_redis_server
from tests.factories import NOW, make_record
from tests.integration.test_slack_flow import submitted
from tests.slack_fake import FakeSlack
from tests.slack_harness import APPROVER, BotUnderTest

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


# --- Redis lost in the middle of a purchase ----------------------------------------------

AOF = ("--appendonly", "yes", "--appendfsync", "always")
BLOCK = '2x p5.48xlarge 3d from 2026-12-14 ec2 reason="load test"'


class Outage:
    """A bot whose store is a throwaway redis-server (AOF, every write synced) while the
    sandbox keeps what it sold in the suite's Redis: AWS goes on when the store dies."""

    def __init__(self, fake_slack: FakeSlack, clock: ManualClock, namespace: str, aws: Any):
        self.proc, url, self.port, self.workdir = start_redis_server(*AOF)
        store = RedisStore(open_redis(url), namespace=namespace)
        self.bot = BotUnderTest(fake_slack, store, clock, aws_redis=aws)
        self.bot.expect_crashes()  # the jobs that meet the dead store log it

    def kill_when(self, dry_run: bool) -> None:
        """SIGKILL the store once, as the purchase call is built: at its dry run (the
        attempt is recorded, its call not sent) or at the real one (sent)."""
        ec2 = self.bot.services.accounts.clients(None, "us-east-1").ec2_once  # type: ignore[attr-defined]
        once = [self.proc]

        def kill(params: dict[str, Any], **_: Any) -> None:
            if bool(params.get("DryRun")) is dry_run and once:
                proc = once.pop()
                proc.kill()
                proc.wait(timeout=10)

        ec2.meta.events.register("before-parameter-build.ec2.PurchaseCapacityBlock", kill)

    def restart(self) -> None:
        self.proc, *_ = start_redis_server(*AOF, port=self.port, workdir=self.workdir)

    def close(self) -> None:
        self.bot.close()
        self.proc.kill()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture
def outage(fake_slack: FakeSlack, clock: ManualClock, namespace: str, redis_store: RedisStore):  # type: ignore[no-untyped-def]
    made = Outage(fake_slack, clock, namespace, redis_store.redis)
    yield made
    made.close()


def approved_block(bot: BotUnderTest) -> str:
    request_id = submitted(bot, BLOCK)
    assert bot.services.approvals.approve(request_id, bot.actor(APPROVER)) is not None
    assert bot.record(request_id).state is State.APPROVED
    return request_id


def test_a_purchase_whose_store_died_before_its_call_is_bought_once_on_retry(
    outage: Outage,
) -> None:
    bot = outage.bot
    request_id = approved_block(bot)
    outage.kill_when(dry_run=True)  # the attempt is recorded; its call is not sent
    with pytest.raises(redis.ConnectionError):
        bot.worker.drain()
    outage.restart()
    record = bot.record(request_id)
    assert record.state is State.PURCHASING and record.attempt is not None
    assert record.attempt.never_sent and bot.purchase_calls() == 0
    bot.clock.advance(ATTEMPT_LEASE + timedelta(minutes=1))  # the dead job's leases run out
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING, record.failure  # never "purchase unknown"
    assert bot.purchase_calls() == 1
    assert [a.sent_at is not None for a in record.attempts] == [False, True]
    actions = [e.action for e in bot.services.store.audit(request_id)]
    assert actions[-4:] == ["purchasing", "purchasing", "sending", "purchased"]


def test_a_purchase_whose_store_died_after_its_call_was_sent_is_reconciled_never_bought_again(
    outage: Outage,
) -> None:
    bot = outage.bot
    request_id = approved_block(bot)
    # The call goes out as the store dies; AWS buys, but its answer is lost and the
    # block shows in AWS's listings only ten minutes later.
    bot.market.conditions.lose_answers(
        "PurchaseCapacityBlock", AnswerFault.READ_TIMEOUT, shown_after=timedelta(minutes=10)
    )
    outage.kill_when(dry_run=False)
    with pytest.raises(redis.ConnectionError):
        bot.worker.drain()
    outage.restart()
    record = bot.record(request_id)
    assert record.attempt is not None and record.attempt.sent_at is not None
    assert bot.purchase_calls() == 1
    bot.clock.advance(ATTEMPT_LEASE + timedelta(minutes=1))
    bot.wait()  # looked for (not listed yet): unknown, never bought again
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    assert bot.purchase_calls() == 1
    bot.clock.advance(timedelta(minutes=10))
    bot.wait()  # looked for again: AWS lists it now
    record = bot.record(request_id)
    assert record.state in (State.PAYMENT_PENDING, State.SCHEDULED), record.failure
    assert record.reservation is not None and len(record.attempts) == 1
    assert bot.purchase_calls() == 1
    assert "reconciled" in [e.action for e in bot.services.store.audit(request_id)]


# --- Slack's requests while the store is down ----------------------------------------------


def test_requests_in_flight_while_the_store_is_down_get_200_saying_to_try_again(
    outage: Outage,
) -> None:
    """Slack shows a 500 as a failure of its own ("dispatch_failed"), with nothing to do:
    every request that finds the store down is answered 200, telling the person to try
    again in a minute (a command in its reply, a form on the form, a click on its
    response_url)."""
    bot = outage.bot
    request_id = approved_block(bot)
    outage.proc.kill()
    outage.proc.wait(timeout=10)
    reply, _ = bot.command("status")
    assert reply.status == 200, reply.body
    assert UNAVAILABLE in json.loads(reply.body)["text"]
    values = {FormBlock.REJECT_REASON.value: payloads.text_input("over budget")}
    form = payloads.view_submission(
        CallbackId.REJECT.value, values, APPROVER, json.dumps({"request": request_id})
    )
    reply = bot.post(*form)
    assert reply.status == 200, reply.body
    (error,) = json.loads(reply.body)["errors"].values()
    assert "could not reach its database" in error
    reply, token = bot.click(ActionId.APPROVE.value, request_id, APPROVER, message_ts="9.9")
    assert reply.status == 200 and reply.body == ""
    deadline = time.monotonic() + 10  # told on a thread of its own, after the ack
    while not bot.responses(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["text"] for r in bot.responses(token)] == [UNAVAILABLE]
