"""Measured use through the real app: instances launched and stopped in the sandbox,
the sampling round, idle alerts (once per stretch, also with two workers), Release it,
and the report card in the requester's DM and the approval card's thread."""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta
from typing import Any

from bot.blocks.ids import ActionId
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.purchase import TAG_NAMESPACE
from bot.domain.records import Reservation, SlackMessage
from bot.services.jobs import RetryLater
from bot.services.ports import Measure, Target
from tests.integration.reminder_steps import DM, at, buy, move, texts
from tests.races import ReadsBeforeWrites
from tests.slack_harness import APPROVAL_CHANNEL, OUTSIDER, REQUESTER, BotUnderTest

H = timedelta(hours=1)
MIN = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
TAG = "gpu-bot:request-id"


def launch(bot: BotUnderTest, res: Reservation, count: int, request_id: str = "R1") -> list[str]:
    """As the usage hint says: into the reservation, tagged with the request."""
    params: dict[str, Any] = {
        "ImageId": "ami-0123456789abcdef0",
        "InstanceType": res.instance_type,
        "MinCount": count,
        "MaxCount": count,
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": res.id}
        },
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": [{"Key": TAG, "Value": request_id}]}
        ],
    }
    if res.availability_zone:
        params["Placement"] = {"AvailabilityZone": res.availability_zone}
    if res.kind is OptionKind.CAPACITY_BLOCK:
        params["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    made = bot.aws(res.region).ec2.run_instances(**params)
    return [i["InstanceId"] for i in made["Instances"]]


def stop(bot: BotUnderTest, ids: list[str]) -> None:
    bot.aws("us-east-1").ec2.terminate_instances(InstanceIds=ids)


def idle_alerts(bot: BotUnderTest, channel: str = DM) -> list[str]:
    return [t for t in texts(bot, channel, everything=True) if "has been idle" in t]


def posted(bot: BotUnderTest, key: str) -> list[Any]:
    """The postMessage calls that carried delivery key `key` (each as its blocks' text)."""
    return [
        c
        for c in bot.fake.of("chat.postMessage")
        if key in str(c.args.get("metadata", "")) and c.answer.get("ok")
    ]


def with_card(bot: BotUnderTest, request_id: str = "R1") -> SlackMessage:
    """An approval card to reply under, as the notification job records it."""
    posted = bot.services.slack.chat_postMessage(channel=APPROVAL_CHANNEL, text="card")
    card = SlackMessage(channel=str(posted["channel"]), ts=str(posted["ts"]))
    record = bot.record(request_id)
    move(bot, request_id, record.state, approval_message=card)
    return card


def test_a_block_sampled_through_its_life_gets_its_report_card(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK, days=1)
    card = with_card(bot)
    at(bot, res.start)
    move(bot, "R1", State.ACTIVE)
    bot.wait()  # the first round: nothing runs yet
    ids = launch(bot, res, 2)
    at(bot, res.start + 5 * MIN)  # sees 2
    at(bot, res.start + 65 * MIN)  # still 2 (one round for the hour)
    stop(bot, ids[:1])
    at(bot, res.start + 70 * MIN)  # sees 1, until the end
    usage = bot.record("R1").usage
    assert usage is not None and usage.running == 1
    # The rule by hand: 0 for 5 min, 2 for 65 min, 1 for the rest of the 24 h.
    assert usage.used_instance_hours == 2 * 65 / 60
    move(bot, "R1", State.EXPIRED)
    at(bot, res.end + 3 * MIN)  # the report card, after the cleanup prompt's first look
    at(bot, res.end + 3 * MIN + 2 * SECOND)  # (DMs paced a second apart)
    final = bot.record("R1").usage
    assert final is not None
    used = 2 * 65 / 60 + (24 * 60 - 70) / 60
    assert abs(final.used_instance_hours - used) < 1e-9
    assert abs(final.billed_instance_hours - 48.0) < 1e-9
    (report,) = [t for t in texts(bot, everything=True) if t.startswith("Request R1: ")]
    price = bot.services.usage.on_demand_hourly(bot.record("R1"))
    assert price is not None and res.fee_usd is not None
    on_demand = round(used * price, 2)
    (sent,) = posted(bot, "report:R1")
    shown = sent.text_of_blocks()
    assert f"${on_demand:,.2f}" in shown and f"${res.fee_usd:,.2f}" in shown
    assert f"{used:,.1f} of 48.0 instance-hours ({100 * used / 48:.0f}% utilisation)" in shown
    saved = round(on_demand - res.fee_usd, 2)
    verdict = (
        f"The block saved ${saved:,.2f}."
        if saved >= 0
        else f"On-Demand would have been ${-saved:,.2f} cheaper."
    )
    assert verdict in shown
    (in_thread,) = posted(bot, "report-thread:R1")
    assert in_thread.args["thread_ts"] == card.ts and verdict in in_thread.text_of_blocks()
    assert [m["text"] for m in bot.fake.threads[(card.channel, card.ts)]] == [report]


def _round(bot: BotUnderTest) -> None:
    with contextlib.suppress(RetryLater):  # the round comes back in five minutes
        bot.services.usage.run_round()


def test_one_idle_alert_per_stretch_even_with_two_workers(make_bot) -> None:  # type: ignore[no-untyped-def]
    first, second = make_bot(), make_bot()
    res = buy(first, OptionKind.CAPACITY_BLOCK, days=3)
    at(first, res.start)
    move(first, "R1", State.ACTIVE)
    ids = launch(first, res, 1)
    first.wait()
    stop(first, ids)
    stretch = res.start + 10 * MIN
    at(first, stretch)  # nothing runs from here
    # Both workers sample the same moment, each deciding on the same version of R1.
    gate = ReadsBeforeWrites("R1", readers=2)
    gate.install(first.services.store)  # type: ignore[arg-type]
    gate.install(second.services.store)  # type: ignore[arg-type]
    first.clock.set(stretch + 2 * H)
    racers = [threading.Thread(target=_round, args=(bot,)) for bot in (first, second)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(20)
    first.wait()
    second.wait()
    decided = [e for e in first.services.store.audit("R1") if e.detail.endswith(": tell")]
    assert len(decided) == 1
    (alert,) = idle_alerts(first)
    assert "idle for 2 h" in alert
    at(first, stretch + 6 * H)
    at(first, stretch + 11 * H)
    assert len(idle_alerts(first)) == 1  # nothing new until 12 h
    at(first, stretch + 12 * H)
    assert len(idle_alerts(first)) == 2
    assert idle_alerts(first, APPROVAL_CHANNEL) == []
    at(first, stretch + 24 * H)
    assert len(idle_alerts(first, APPROVAL_CHANNEL)) == 1  # escalated, once
    at(first, stretch + 25 * H)
    assert len(idle_alerts(first, APPROVAL_CHANNEL)) == 1
    # Something runs: the stretch is over; idle again, a new stretch is told again.
    ids = launch(first, res, 1)
    at(first, stretch + 26 * H)
    stop(first, ids)
    at(first, stretch + 26 * H + 5 * MIN)
    at(first, stretch + 28 * H + 5 * MIN)
    assert len(idle_alerts(first)) == 3
    assert "cannot be cancelled" in first.fake.of("chat.postMessage")[-1].text_of_blocks()


def _odcr(bot: BotUnderTest, request_id: str = "R1") -> Reservation:
    """An ODCR created in the sandbox as the purchase flow creates one, recorded active."""
    now = bot.clock.now()
    made = bot.aws("us-east-1").ec2.create_capacity_reservation(
        InstanceType="p5.48xlarge",
        InstancePlatform="Linux/UNIX",
        AvailabilityZone="us-east-1b",
        InstanceCount=2,
        EndDateType="limited",
        EndDate=now + timedelta(days=2),
        InstanceMatchCriteria="targeted",
        TagSpecifications=[
            {
                "ResourceType": "capacity-reservation",
                "Tags": [
                    {"Key": TAG, "Value": request_id},
                    {"Key": TAG_NAMESPACE, "Value": bot.settings.namespace},
                ],
            }
        ],
    )["CapacityReservation"]
    res = buy(bot, OptionKind.ON_DEMAND_RESERVATION, request_id)
    res = res.model_copy(
        update={
            "id": made["CapacityReservationId"],
            "availability_zone": made["AvailabilityZone"],
            "start": now,
            "end": made["EndDate"],
        }
    )
    move(bot, request_id, State.ACTIVE, reservation=res)
    return res


def test_release_it_cancels_an_idle_odcr_through_the_cleanup_rules(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = _odcr(bot)
    start = bot.clock.now()
    bot.wait()
    at(bot, start + 2 * H)
    (alert,) = idle_alerts(bot)
    assert "idle for 2 h" in alert
    message = bot.fake.messages[DM][-1]
    assert "Release it" in bot.fake.of("chat.postMessage")[-1].text_of_blocks()
    ts = message["ts"]
    _, token = bot.click(ActionId.RELEASE.value, "R1", OUTSIDER, message_ts=ts)
    bot.wait()
    refused = str(bot.responses(token))
    assert "Only the requester of R1 or an approver can release it." in refused
    assert bot.record("R1").state is State.ACTIVE  # an outsider may not
    bot.click(ActionId.RELEASE.value, "R1", REQUESTER, message_ts=ts)
    bot.wait()
    at(bot, start + 2 * H + 10 * MIN)  # the deletes are verified
    at(bot, start + 2 * H + 10 * MIN + 2 * SECOND)  # its DM, paced a second apart
    record = bot.record("R1")
    assert record.state is State.CLEANED_UP
    found = bot.aws("us-east-1").ec2.describe_capacity_reservations(
        CapacityReservationIds=[res.id]
    )["CapacityReservations"][0]
    assert found["State"] == "cancelled"
    assert record.reservation is not None and record.reservation.end == start + 2 * H
    actors = {e.action: e.actor for e in bot.services.store.audit("R1")}
    assert actors["released"] == REQUESTER
    report = [t for t in texts(bot, everything=True) if t.startswith("Request R1: ")]
    assert report == ["Request R1: On-Demand would have been $" + report[0].split("$", 1)[1]]


def test_release_is_refused_for_what_cannot_be_cancelled(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK, days=1)
    at(bot, res.start)
    move(bot, "R1", State.ACTIVE)
    said = bot.services.usage.release("R1", bot.actor(REQUESTER))
    assert "Only an On-Demand Capacity Reservation can be released early" in said
    assert bot.record("R1").state is State.ACTIVE
    assert bot.services.usage.release("R9", bot.actor(REQUESTER)) == "There is no request R9."


def test_on_demand_and_spot_count_the_instances_tagged_with_the_request(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    # On-Demand instances tagged with another request are not R1's; nor are untagged ones.
    made = bot.aws("us-east-1").ec2.run_instances(
        ImageId="ami-0123456789abcdef0",
        InstanceType="p5.48xlarge",
        MinCount=3,
        MaxCount=3,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": TAG, "Value": "R2"}]}],
    )
    assert len(made["Instances"]) == 3
    meter = bot.services.usage.meter
    counted = meter.running(
        [
            Target(None, "us-east-1", Measure.TAGGED, "R2"),
            Target(None, "us-east-1", Measure.TAGGED, "R3"),
        ]
    )
    assert list(counted.values()) == [3, 0]


def test_after_a_long_gap_the_requester_hears_of_the_idle_block_too(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = buy(bot, OptionKind.CAPACITY_BLOCK, days=3)
    at(bot, res.start)
    move(bot, "R1", State.ACTIVE)
    bot.wait()  # the first round: nothing runs
    # No round for 26 h (the worker was down): the next one finds a day's idleness.
    at(bot, res.start + 26 * H)
    at(bot, res.start + 26 * H + 2 * SECOND)
    assert len(idle_alerts(bot, APPROVAL_CHANNEL)) == 1
    (told,) = idle_alerts(bot)
    assert "idle for 1 d 2 h" in told
    dm = [c for c in bot.fake.of("chat.postMessage") if "has been idle" in str(c.args["text"])]
    assert "The approvers were told too." in dm[-1].text_of_blocks()
    at(bot, res.start + 30 * H)
    assert len(idle_alerts(bot)) == 1 and len(idle_alerts(bot, APPROVAL_CHANNEL)) == 1
