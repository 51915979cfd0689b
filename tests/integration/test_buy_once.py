"""Buy once, proved at the service, not only by the job queue: two jobs for one purchase at
the same moment, a job whose lease ran out while its AWS call hangs, an answer lost after
AWS committed (through botocore's own retry handler, with the clients the bot really
uses), and an attempt record lost with Redis's last second. Purchases are counted by the
sandbox market, which keeps what it sold."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from aws_sandbox import AnswerFault
from bot.domain.audit import BOT, AuditEntry
from bot.domain.buy_once import ATTEMPT_LEASE
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.purchase import TAG_NAMESPACE, TAG_REQUEST
from bot.services.actor import Actor
from bot.services.extensions import ExtensionJob
from bot.services.jobs import RetryLater
from tests.integration.reminder_steps import at
from tests.integration.test_extensions import active
from tests.integration.test_slack_flow import submitted
from tests.races import ReadsBeforeWrites
from tests.slack_harness import APPROVER, APPROVER_2, REQUESTER, BotUnderTest

BLOCK = '2x p5.48xlarge 3d from 2026-12-14 ec2 reason="load test"'
PLAN = '2x p5.48xlarge 4d from 2026-12-14 sagemaker reason="fine-tune"'
PURCHASE_OPERATIONS = {
    "capacity-block": "PurchaseCapacityBlock",
    "training-plan": "CreateTrainingPlan",
}
REQUESTS = {"capacity-block": BLOCK, "training-plan": PLAN}
EXTENSION_OPERATIONS = {
    OptionKind.CAPACITY_BLOCK: "PurchaseCapacityBlockExtension",
    OptionKind.TRAINING_PLAN: "ExtendTrainingPlan",
}
MIN = timedelta(minutes=1)


def market(bot: BotUnderTest) -> Any:
    return bot.services.accounts.market()  # type: ignore[attr-defined]


def approved(bot: BotUnderTest, kind: str) -> str:
    """A request for `kind` approved by the service (its purchase job is due, not run)."""
    request_id = submitted(bot, REQUESTS[kind], f"{kind}:0")
    decision = bot.services.approvals.approve(request_id, bot.actor(APPROVER))
    assert decision is not None and bot.record(request_id).state is State.APPROVED
    return request_id


def race(calls: list[Callable[[], object]], hold: Any) -> list[BaseException]:
    """Run the calls at once while the purchase call is held: a racer that goes on to buy
    waits at the hold too, so a second purchase cannot hide behind the first having
    finished. Returns what the racers raised."""
    raised: list[BaseException] = []

    def run(call: Callable[[], object]) -> None:
        try:
            call()
        except BaseException as exc:  # a RetryLater is a racer that gave way
            raised.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    assert hold.reached.wait(20), "no racer reached the purchase call"
    for thread in threads:
        thread.join(3)  # those that gave way are done; any that went on waits at the hold
    hold.release()
    for thread in threads:
        thread.join(20)
    return raised


# --- two jobs for one purchase -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["capacity-block", "training-plan"])
def test_two_purchase_jobs_at_the_same_moment_buy_once(make_bot, kind: str) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = approved(bot, kind)
    # Both racers read the request as approved before either writes: each job reads it,
    # then reads it again to claim it; no write goes through before three reads.
    ReadsBeforeWrites(request_id, readers=3).install(bot.services.store)
    hold = market(bot).conditions.hold(PURCHASE_OPERATIONS[kind])
    run = lambda: bot.services.purchases.run_purchase(request_id)  # noqa: E731
    race([run, run], hold)
    assert market(bot).purchase_calls() == 1
    assert market(bot).bought()[kind] == 1
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING and len(record.attempts) == 1


def test_two_jobs_retrying_a_throttled_purchase_at_the_same_moment_buy_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = approved(bot, "capacity-block")
    market(bot).conditions.throttle(1, "PurchaseCapacityBlock")
    with pytest.raises(RetryLater):
        bot.services.purchases.run_purchase(request_id)
    throttled = bot.record(request_id)
    assert throttled.state is State.PURCHASING and throttled.attempt is not None
    assert throttled.attempt.refused == "throttled" and market(bot).purchase_calls() == 0
    # Both retries find the refused attempt, its lease run out, and start a new one. The
    # state they saw (purchasing) is the state after the first wins: only the count of
    # attempts each saw tells the second that it lost.
    bot.clock.advance(ATTEMPT_LEASE + MIN)
    ReadsBeforeWrites(request_id, readers=3).install(bot.services.store)
    hold = market(bot).conditions.hold("PurchaseCapacityBlock")
    run = lambda: bot.services.purchases.run_purchase(request_id)  # noqa: E731
    race([run, run], hold)
    assert market(bot).purchase_calls() == 1
    assert market(bot).bought()["capacity-block"] == 1
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING and len(record.attempts) == 2


def test_a_purchase_whose_lease_ran_out_while_its_call_hangs_is_bought_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = approved(bot, "capacity-block")
    hold = market(bot).conditions.hold("PurchaseCapacityBlock")
    first = threading.Thread(target=bot.services.purchases.run_purchase, args=(request_id,))
    first.start()
    assert hold.reached.wait(20)
    # The first worker is stuck inside the purchase call past its lease: another job
    # runs, finds the attempt abandoned, looks in AWS (nothing yet) and never buys.
    bot.clock.advance(ATTEMPT_LEASE + MIN)
    bot.services.purchases.run_purchase(request_id)
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    hold.release()
    first.join(20)
    # The first call's answer arrives: what it bought is recorded, once.
    assert market(bot).purchase_calls() == 1
    assert bot.record(request_id).state is State.PAYMENT_PENDING


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_two_extension_jobs_at_the_same_moment_buy_once(make_bot, kind: OptionKind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot, kind)
    extensions = bot.services.extensions
    extensions.ask("R1", Actor(REQUESTER, False), 24)
    assert "Approved" in extensions.decide("R1", 1, Actor(APPROVER, True), True)
    ReadsBeforeWrites("R1", readers=3).install(bot.services.store)  # as for purchases
    hold = market(bot).conditions.hold(EXTENSION_OPERATIONS[kind])
    run = lambda: extensions.buy(ExtensionJob(request="R1", number=1))  # noqa: E731
    race([run, run], hold)
    assert market(bot).extension_calls() == 1
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]


def test_an_extension_lease_that_ran_out_while_its_call_hangs_is_bought_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot, OptionKind.CAPACITY_BLOCK)
    extensions = bot.services.extensions
    extensions.ask("R1", Actor(REQUESTER, False), 24)
    extensions.decide("R1", 1, Actor(APPROVER, True), True)
    hold = market(bot).conditions.hold("PurchaseCapacityBlockExtension")
    job = ExtensionJob(request="R1", number=1)
    first = threading.Thread(target=extensions.buy, args=(job,))
    first.start()
    assert hold.reached.wait(20)
    bot.clock.advance(ATTEMPT_LEASE + MIN)
    extensions.buy(job)  # the claim is stale: AWS is asked, nothing is bought
    assert bot.record("R1").extension.status is ExtensionStatus.UNKNOWN  # type: ignore[union-attr]
    hold.release()
    first.join(20)
    assert market(bot).extension_calls() == 1
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]


def test_an_extension_job_run_again_after_it_was_bought_changes_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot, OptionKind.CAPACITY_BLOCK)
    extensions = bot.services.extensions
    extensions.ask("R1", Actor(REQUESTER, False), 24)
    extensions.decide("R1", 1, Actor(APPROVER, True), True)
    job = ExtensionJob(request="R1", number=1)
    extensions.buy(job)
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]
    # AWS's describe lags and still shows the old end when the job runs again.
    real = extensions.market.current_end
    extensions.market.current_end = lambda _res: res.end  # type: ignore[method-assign]
    try:
        extensions.buy(job)
    finally:
        extensions.market.current_end = real  # type: ignore[method-assign]
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.BOUGHT
    assert market(bot).extension_calls() == 1


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_a_lost_extension_attempt_record_buys_nothing_when_aws_applied_it(make_bot, kind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot, kind)
    extensions = bot.services.extensions
    extensions.ask("R1", Actor(REQUESTER, False), 24)
    extensions.decide("R1", 1, Actor(APPROVER, True), True)
    job = ExtensionJob(request="R1", number=1)
    extensions.buy(job)
    bought = bot.record("R1")
    assert bought.extension is not None and bought.extension.status is ExtensionStatus.BOUGHT
    assert market(bot).extension_calls() == 1
    # Redis lost its last second: the extension is back to approved with no attempt, and the
    # reservation to its old end, while AWS holds the extension.
    lost_ext = bought.extension.model_copy(
        update={"status": ExtensionStatus.APPROVED, "attempt_at": None, "lease_until": None}
    )
    lost = bought.model_copy(
        update={"extension": lost_ext, "reservation": res, "extended_usd": 0.0}
    )
    entry = AuditEntry("R1", BOT, "restored", bought.state.value, lost.state.value, bot.clock.now())
    bot.services.store.save(bought, lost, entry)
    extensions.buy(job)
    assert market(bot).extension_calls() == 1  # AWS was asked where it ends: extended already
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.BOUGHT
    assert record.reservation is not None and record.reservation.end == bought.reservation.end  # type: ignore[union-attr]


# --- answers lost after AWS committed -------------------------------------------------------


@pytest.mark.parametrize(
    "fault", [AnswerFault.READ_TIMEOUT, AnswerFault.CONNECTION_RESET, AnswerFault.SERVER_ERROR]
)
def test_a_block_whose_answer_was_lost_is_bought_once_and_reconciled(make_bot, fault) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = approved(bot, "capacity-block")
    # AWS bought it; the answer is lost, and AWS's describes miss it for half a minute.
    market(bot).conditions.lose_answers(
        "PurchaseCapacityBlock", fault, shown_after=timedelta(seconds=30)
    )
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.PURCHASE_UNKNOWN, record.failure
    assert market(bot).purchase_calls() == 1  # sent once: the SDK did not re-send it
    at(bot, bot.clock.now() + MIN)  # reconcile looks again, and finds it by its tag
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    assert market(bot).purchase_calls() == 1 and market(bot).bought()["capacity-block"] == 1
    actions = [e.action for e in bot.services.store.audit(request_id)]
    assert "purchase unknown" in actions and "reconciled" in actions


def test_a_lost_answer_is_reconciled_by_the_tags_read_from_the_answer(make_bot) -> None:  # type: ignore[no-untyped-def]
    """DescribeCapacityReservations documents no tag filter (the sandbox refuses one), so
    reconciling reads every reservation's Tags: one of another deployment with the same
    request id, and one of ours for another request, are not taken for this purchase."""
    bot = make_bot()
    request_id = approved(bot, "capacity-block")
    ec2 = bot.services.accounts.clients(None, "us-east-1").ec2  # type: ignore[attr-defined]
    ns = bot.settings.namespace
    decoys = {
        ec2.create_capacity_reservation(
            InstanceType="p5.48xlarge",
            InstancePlatform="Linux/UNIX",
            AvailabilityZone="us-east-1b",
            InstanceCount=1,
            TagSpecifications=[
                {
                    "ResourceType": "capacity-reservation",
                    "Tags": [
                        {"Key": TAG_REQUEST, "Value": rid},
                        {"Key": TAG_NAMESPACE, "Value": namespace},
                    ],
                }
            ],
        )["CapacityReservation"]["CapacityReservationId"]
        for rid, namespace in ((request_id, "another-deployment"), ("R999", ns))
    }
    before = market(bot).purchase_calls()  # the decoys were bought too
    market(bot).conditions.lose_answers(
        "PurchaseCapacityBlock", AnswerFault.READ_TIMEOUT, shown_after=timedelta(seconds=30)
    )
    bot.wait()
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    at(bot, bot.clock.now() + MIN)
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING and record.reservation is not None
    assert record.reservation.id not in decoys
    (block,) = ec2.describe_capacity_blocks()["CapacityBlocks"]
    assert record.reservation.id in block["CapacityReservationIds"]
    assert market(bot).purchase_calls() == before + 1


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_an_extension_whose_answer_was_lost_is_bought_once_and_reconciled(make_bot, kind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot, kind)
    extensions = bot.services.extensions
    extensions.ask("R1", Actor(REQUESTER, False), 24)
    market(bot).conditions.lose_answers(
        EXTENSION_OPERATIONS[kind], AnswerFault.READ_TIMEOUT, shown_after=timedelta(seconds=30)
    )
    extensions.decide("R1", 1, Actor(APPROVER, True), True)
    bot.wait()
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.UNKNOWN
    assert market(bot).extension_calls() == 1
    at(bot, bot.clock.now() + MIN)
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.BOUGHT
    assert market(bot).extension_calls() == 1
    at(bot, bot.clock.now() + MIN)  # posts to one person are paced a second apart
    told = [str(c.args.get("text")) for c in bot.fake.of("chat.postMessage")]
    assert any("may or may not have been bought" in t for t in told)
    assert any("is extended to" in t for t in told), told


# --- an attempt record lost --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["capacity-block", "training-plan"])
def test_a_lost_attempt_record_buys_nothing_when_aws_holds_it(make_bot, kind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = approved(bot, kind)
    bot.wait()
    bought = bot.record(request_id)
    assert bought.state is State.PAYMENT_PENDING and market(bot).purchase_calls() == 1
    # Redis lost its last second: the request is back in approved, with no attempt.
    lost = bought.model_copy(update={"state": State.APPROVED, "attempts": (), "reservation": None})
    entry = AuditEntry(request_id, BOT, "restored", bought.state.value, "approved", bot.clock.now())
    bot.services.store.save(bought, lost, entry)
    bot.services.purchases.run_purchase(request_id)
    assert market(bot).purchase_calls() == 1  # AWS was asked first, and holds it
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING
    assert record.reservation is not None and record.reservation.id == bought.reservation.id  # type: ignore[union-attr]
    assert "found before buying" in [e.action for e in bot.services.store.audit(request_id)]
    assert market(bot).bought()[kind] == 1


def test_two_approvals_buy_a_training_plan_tagged_with_both(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(second_approval_usd=1000)
    request_id = submitted(bot, PLAN, "training-plan:0")
    assert bot.record(request_id).required_approvals == 2
    bot.approve(request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    bot.approve(request_id, APPROVER_2)
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING, record.failure
    sm = bot.aws("us-east-1").sagemaker
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=record.reservation.id)["Tags"]}  # type: ignore[union-attr]
    assert tags["gpu-bot:approvers"] == f"{APPROVER} {APPROVER_2}"
    assert market(bot).bought()["training-plan"] == 1
