"""Buying what was approved, through real boto3 clients on the sandbox market (kept in
the test's Redis namespace): each kind, each refusal, a fee rise, a killed process, two
accounts and the organisation's 256-instance limit. Purchase calls are counted by the
market itself."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest

from aws_sandbox.conditions import PurchaseFailure
from bot.blocks.ids import ActionId
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.purchase import TAG_APPROVERS, TAG_NAMESPACE, TAG_REQUEST, plan_name
from tests import slack_payloads as payloads
from tests.iam_sandbox import as_someone_else
from tests.integration.test_slack_flow import action_ids, submitted
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest

BLOCK = '2x p5.48xlarge 3d from 2026-12-14 ec2 reason="load test"'
PLAN = '2x p5.48xlarge 4d from 2026-12-14 sagemaker reason="fine-tune"'
RESEARCH_ROLE = "arn:aws:iam::111122223333:role/gpu-bot"


def approve(bot: BotUnderTest, request_id: str) -> None:
    reply, _ = bot.approve(request_id, APPROVER)
    assert reply.status == 200
    bot.wait()


def market(bot: BotUnderTest, account: str | None = None) -> Any:
    return bot.services.accounts.market(account)  # type: ignore[attr-defined]


def dms(bot: BotUnderTest) -> list[str]:
    return [str(c.args.get("text", "")) for c in requester_posts(bot)]


def requester_posts(bot: BotUnderTest) -> list[Any]:
    return [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER]


def delivered_message(bot: BotUnderTest) -> str:
    """The one message saying the capacity is delivered, with how to use it: the reminder
    at start (the decision messages do not say it again)."""
    started = [c for c in requester_posts(bot) if "is delivered" in str(c.args.get("text"))]
    assert len(started) == 1, [str(c.args.get("text")) for c in started]
    assert not any("is active" in t for t in dms(bot))
    return f"{started[0].args['text']}\n{started[0].text_of_blocks()}"


def card_text(bot: BotUnderTest) -> str:
    return str(bot.fake.of("chat.update")[-1].text_of_blocks())


# --- happy paths ------------------------------------------------------------------------


def test_a_capacity_block_is_bought_tagged_and_followed_to_its_end(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK)
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING
    reservation = record.reservation
    assert reservation is not None and reservation.kind is OptionKind.CAPACITY_BLOCK
    assert reservation.id.startswith("cr-") and reservation.instances == 2
    assert reservation.fee_usd == record.choice.total_usd  # type: ignore[union-attr]
    ec2 = bot.services.accounts.clients(None, "us-east-1").ec2  # type: ignore[attr-defined]
    (raw,) = [
        r
        for r in ec2.describe_capacity_reservations()["CapacityReservations"]
        if {"Key": TAG_REQUEST, "Value": request_id} in r["Tags"]
    ]
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags[TAG_APPROVERS] == APPROVER and tags[TAG_NAMESPACE] == bot.settings.namespace
    assert bot.purchase_calls() == 1
    audit = bot.services.store.audit(request_id)
    assert audit[-1].action == "purchased" and audit[-1].usd == reservation.fee_usd

    hour = timedelta(hours=1)
    moments = (
        (bot.clock.now() + hour, State.SCHEDULED),
        (reservation.start + hour, State.ACTIVE),
        (reservation.end + hour, State.EXPIRED),
    )
    for moment, state in moments:
        bot.clock.set(moment)
        bot.wait()
        # After expiry the cleanup prompt may close it at once: nothing was left running.
        assert bot.record(request_id).state in (state, State.CLEANED_UP)
    told = dms(bot)
    active = delivered_message(bot)
    assert "--instance-market-options MarketType=capacity-block" in active
    assert f"CapacityReservationId={reservation.id}" in active
    assert reservation.availability_zone in active
    assert any("expired" in t or "cleaned up" in t for t in told)
    assert bot.purchase_calls() == 1


def test_a_training_plan_is_created_under_a_name_derived_from_the_request(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, PLAN, pick="training-plan:0")
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING, record.failure
    name = plan_name(bot.settings.namespace, request_id, 1)
    assert record.reservation is not None
    assert record.reservation.id.endswith(f"training-plan/{name}")
    bot.clock.set(record.reservation.start + timedelta(hours=1))
    bot.wait()
    assert bot.record(request_id).state is State.ACTIVE
    active = delivered_message(bot)
    assert "TrainingPlanArn" in active and "MlReservationArn" in active
    assert bot.purchase_calls() == 1


def test_on_demand_needs_nothing_bought_and_runs_in_its_window(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK, pick="on-demand:0")
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.SCHEDULED
    bot.clock.set(record.request.start + timedelta(hours=1))
    bot.wait()
    assert bot.record(request_id).state is State.ACTIVE
    bot.clock.set(record.request.end + timedelta(hours=1))
    bot.wait()
    # Ended; the cleanup prompt's look found nothing tagged for it still running.
    assert bot.record(request_id).state is State.CLEANED_UP
    assert State.EXPIRED.value in [e.to_state for e in bot.services.store.audit(request_id)]
    assert bot.purchase_calls() == 0


def test_an_on_demand_reservation_is_created_at_its_window_with_a_client_token(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK, pick="on-demand-reservation:0")
    approve(bot, request_id)
    assert bot.record(request_id).state is State.APPROVED  # waits for its window
    assert bot.purchase_calls() == 0
    bot.clock.set(bot.record(request_id).request.start - timedelta(minutes=5))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.ACTIVE, record.failure
    assert record.reservation is not None
    assert record.reservation.end == record.request.end
    assert bot.purchase_calls() == 1


# --- the offering moved, AWS refused ---------------------------------------------------


def test_a_fee_rise_buys_nothing_and_the_requester_is_quoted_again(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK)
    market(bot).conditions.price_factor = 1.1
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.QUOTED
    assert record.approvals == () and record.reservation is None
    assert record.failure is not None and "fee rose from $" in record.failure
    assert bot.purchase_calls() == 0
    assert "fee rose" in card_text(bot)
    assert any("was not bought" in t for t in dms(bot))
    # The requester submits the new quote: a new approval, then the new price is bought.
    from tests.integration.test_slack_flow import submit_form

    submit_form(bot, request_id, "capacity-block:0", "new price")
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING, record.failure
    assert len(record.attempts) == 2 and bot.purchase_calls() == 1


@pytest.mark.parametrize(
    ("failure", "words"),
    [
        (PurchaseFailure.INSUFFICIENT_CAPACITY, "no capacity"),
        (PurchaseFailure.OFFERING_GONE, "offering is gone"),
        (PurchaseFailure.INSTANCE_LIMIT, "instance limit"),
        (PurchaseFailure.ACCESS_DENIED, "ec2:PurchaseCapacityBlock"),
    ],
)
def test_a_refused_purchase_says_why_and_can_be_submitted_again(
    make_bot,  # type: ignore[no-untyped-def]
    failure: PurchaseFailure,
    words: str,
) -> None:
    bot = make_bot()
    request_id = submitted(bot, BLOCK)
    market(bot).conditions.fail_purchases(failure)
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.QUOTED  # submit again for a new approval
    assert record.failure is not None and words in record.failure
    assert words in card_text(bot)
    assert any(words in t for t in dms(bot))
    # The dry run stops an unauthorised purchase before the real call.
    assert bot.purchase_calls() == (0 if failure is PurchaseFailure.ACCESS_DENIED else 1)


def test_throttling_is_retried_and_buys_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK)
    market(bot).conditions.throttle(1, "PurchaseCapacityBlock")
    approve(bot, request_id)
    for _ in range(3):
        bot.clock.advance(timedelta(minutes=2))
        bot.wait()
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    assert bot.purchase_calls() == 1


def test_a_failed_payment_fails_the_request_with_awss_reason(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, PLAN, pick="training-plan:0")
    market(bot).conditions.payments_fail = True
    approve(bot, request_id)
    assert bot.record(request_id).state is State.PAYMENT_PENDING
    bot.clock.advance(timedelta(minutes=5))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.FAILED
    assert record.failure is not None and "payment" in record.failure
    assert any("now failed" in t for t in dms(bot))


def test_a_plan_name_taken_by_someone_else_is_not_ours(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, PLAN, pick="training-plan:0")
    offering = bot.record(request_id).chosen_offering
    assert offering is not None
    sagemaker = bot.services.accounts.clients(None, "us-east-1").sagemaker  # type: ignore[attr-defined]
    with as_someone_else(bot):
        sagemaker.create_training_plan(
            TrainingPlanName=plan_name(bot.settings.namespace, request_id, 1),
            TrainingPlanOfferingId=offering.offering_id,
        )
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.QUOTED
    assert record.failure is not None and "was not bought for this request" in record.failure


# --- crash safety ------------------------------------------------------------------------

KILLED = """
import os, sys
from datetime import datetime
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis
from bot.app import build_services
from bot.config import Settings

url, namespace, now, request_id, event = sys.argv[1:6]
store = RedisStore(open_redis(url), namespace=namespace)
services = build_services(Settings(), clock=ManualClock(datetime.fromisoformat(now)), store=store)
# PurchaseCapacityBlock goes out on the client that never re-sends it.
ec2 = services.accounts.clients(None, "us-east-1").ec2_once
# Killed the hard way, with no chance to write anything more: right before the real
# purchase call is sent, or right after its answer arrived (dry runs pass).
def before(params, **kw):
    if not params.get("DryRun"):
        os._exit(9)
def after(parsed, **kw):
    if "CapacityReservation" in parsed:
        os._exit(9)
handler = before if event == "before" else after
hook = "before-parameter-build" if event == "before" else "after-call"
ec2.meta.events.register(f"{hook}.ec2.PurchaseCapacityBlock", handler)
services.purchases.run_purchase(request_id)
"""


def run_killed(bot: BotUnderTest, redis_url: str, request_id: str, event: str) -> None:
    namespace = bot.services.store.prefix.strip("{}")  # type: ignore[attr-defined]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_BOT_", "SLACK_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED,
            redis_url,
            namespace,
            bot.clock.now().isoformat(),
            request_id,
            event,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 9, done.stderr


def test_killed_after_the_purchase_call_reconcile_finds_it_and_never_buys_again(
    make_bot,  # type: ignore[no-untyped-def]
    redis_url: str,
) -> None:
    bot = make_bot()
    request_id = submitted(bot, BLOCK)
    assert bot.services.approvals.approve(request_id, bot.actor(APPROVER)) is not None
    run_killed(bot, redis_url, request_id, "after")
    record = bot.record(request_id)
    assert record.state is State.PURCHASING and record.attempt is not None
    assert bot.purchase_calls() == 1
    bot.wait()  # the purchase job comes back, but the attempt's lease still holds
    assert bot.record(request_id).state is State.PURCHASING
    bot.clock.advance(timedelta(minutes=6))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.SCHEDULED  # payment cleared while the bot was down
    assert record.reservation is not None and record.reservation.id.startswith("cr-")
    assert [e.action for e in bot.services.store.audit(request_id)][-1] == "reconciled"
    assert bot.purchase_calls() == 1


def unknown_purchase(bot: BotUnderTest, redis_url: str) -> str:
    """An approved request whose purchase job was killed before its AWS call: after the
    lease nothing is found in AWS, and the request waits for a person."""
    request_id = submitted(bot, BLOCK)
    assert bot.services.approvals.approve(request_id, bot.actor(APPROVER)) is not None
    run_killed(bot, redis_url, request_id, "before")
    bot.clock.advance(timedelta(minutes=6))
    bot.wait()
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    return request_id


def test_killed_before_the_call_nothing_is_found_and_a_person_decides(
    make_bot,  # type: ignore[no-untyped-def]
    redis_url: str,
) -> None:
    bot = make_bot()
    request_id = unknown_purchase(bot, redis_url)
    card = bot.fake.of("chat.update")[-1]
    assert ActionId.PURCHASE_CHECK.value in str(card.blocks())
    _, token = bot.click(ActionId.PURCHASE_CHECK.value, request_id, APPROVER)
    bot.wait()
    assert "Still nothing" in bot.responses(token)[-1]["text"]
    _, token = bot.click(ActionId.PURCHASE_MARK_FAILED.value, request_id, REQUESTER)
    bot.wait()
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN  # not an approver
    bot.click(ActionId.PURCHASE_MARK_FAILED.value, request_id, APPROVER)
    bot.wait()
    assert bot.record(request_id).state is State.FAILED
    assert bot.purchase_calls() == 0


def test_a_purchase_of_unknown_outcome_waits_for_the_approvers_in_their_list_and_home(
    make_bot,  # type: ignore[no-untyped-def]
    redis_url: str,
) -> None:
    bot = make_bot()
    request_id = unknown_purchase(bot, redis_url)
    unknown = [ActionId.PURCHASE_CHECK.value, ActionId.PURCHASE_MARK_FAILED.value]

    def waiting_list() -> list[str]:
        _, token = bot.command("list waiting", user=APPROVER)
        bot.wait()
        return action_ids(bot.responses(token)[-1]["blocks"])

    def home() -> list[str]:
        bot.post(*payloads.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"}))
        bot.wait()
        return action_ids(bot.fake.of("views.publish")[-1].view()["blocks"])

    assert waiting_list() == unknown
    assert all(action in home() for action in unknown)
    bot.click(ActionId.PURCHASE_MARK_FAILED.value, request_id, APPROVER)
    bot.wait()
    assert waiting_list() == []  # decided: nothing waits any more
    assert bot.purchase_calls() == 0


# --- accounts and the organisation's limit ---------------------------------------------


def test_a_request_buys_in_its_account_with_an_assumed_role(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(accounts={"research": RESEARCH_ROLE}, default_account="research")
    request_id = submitted(bot, BLOCK)
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.PAYMENT_PENDING
    assert record.reservation is not None and record.reservation.account == "research"
    assert market(bot, "research").purchase_calls() == 1
    assert market(bot, "default").purchase_calls() == 0
    assert market(bot, "research").account_id == "111122223333"
    assert bot.services.accounts.assumed.calls == 1  # type: ignore[attr-defined]  # cached


def _fill(bot: BotUnderTest, account: str, counts: list[int]) -> None:
    """Blocks bought outside the bot (no tags), as AWS would report them."""
    ec2 = bot.services.accounts.clients(account, "us-east-1").ec2  # type: ignore[attr-defined]
    for i, count in enumerate(counts):
        offer = ec2.describe_capacity_block_offerings(
            InstanceType="p5.48xlarge", InstanceCount=count, CapacityDurationHours=24 * (i + 1)
        )["CapacityBlockOfferings"][0]
        with as_someone_else(bot):
            ec2.purchase_capacity_block(
                CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
                InstancePlatform="Linux/UNIX",
            )


def test_the_256_instance_limit_is_counted_across_accounts_from_aws(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(accounts={"research": RESEARCH_ROLE})
    _fill(bot, "default", [64, 64])
    _fill(bot, "research", [64, 62])  # 254 in use
    before = bot.purchase_calls()
    over = submitted(bot, BLOCK.replace("2x", "3x"))  # 257
    approve(bot, over)
    record = bot.record(over)
    assert record.state is State.QUOTED
    assert record.failure is not None and "254 of 256" in record.failure
    assert "when enough blocks end" in record.failure
    assert bot.purchase_calls() == before
    at_limit = submitted(bot, BLOCK)  # 256
    approve(bot, at_limit)
    assert bot.record(at_limit).state is State.PAYMENT_PENDING
    assert bot.purchase_calls() == before + 1


def test_account_in_the_request_picks_where_it_is_quoted_and_bought(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(accounts={"research": RESEARCH_ROLE})
    request_id = submitted(bot, BLOCK + " account=research")
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.request.account == "research"
    assert record.reservation is not None and record.reservation.account == "research"
    assert market(bot, "research").purchase_calls() == 1
    assert market(bot, "default").purchase_calls() == 0
