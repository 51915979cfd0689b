"""What real AWS would show and the old sandbox hid: an On-Demand Capacity Reservation in a
zone that sells its type (not the first zone, not a Local Zone) and targeted, so nobody
else's instance uses it up; cleanup of it that terminates nothing untagged; the
organisation's 256 Capacity Block instances counted in every region the bot buys in; and
the intake's replay key kept for the whole replay window."""

from __future__ import annotations

import html
import json
from datetime import timedelta
from typing import Any

import pytest

from bot.adapters.aws.aftercare import REQUEST_TAG
from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from tests.aws_cli import cli_params
from tests.iam_sandbox import as_someone_else
from tests.integration.test_purchasing import BLOCK, approve
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import REQUESTER, BotUnderTest

H = timedelta(hours=1)


def reservation_bought(bot: BotUnderTest) -> tuple[str, Any]:
    request_id = submitted(bot, BLOCK, pick="on-demand-reservation:0")
    approve(bot, request_id)
    bot.clock.set(bot.record(request_id).request.start - timedelta(minutes=5))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.ACTIVE, record.failure
    assert record.reservation is not None
    return request_id, record.reservation


def launch_text(bot: BotUnderTest) -> str:
    """The mrkdwn of the requester's message that shows an `aws ec2 run-instances` line."""
    for call in bot.fake.of("chat.postMessage"):
        if call.args["channel"] != REQUESTER:
            continue
        blocks = call.args.get("blocks") or []
        blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
        for block in blocks:
            text = str((block.get("text") or {}).get("text", ""))
            if "run-instances" in text:
                return text
    raise AssertionError("no launch line was sent")


@pytest.mark.parametrize("pick", ["on-demand-reservation:0", "capacity-block:0"])
def test_an_instance_launched_as_the_message_says_is_cleaned_up_as_ours(
    make_bot, pick: str
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, BLOCK, pick=pick)
    approve(bot, request_id)
    bought = bot.record(request_id)  # a block is bought at approval, an ODCR before its window
    starts = bought.reservation.start if bought.reservation else bought.request.start
    bot.clock.set(starts + timedelta(minutes=1))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.ACTIVE and record.reservation is not None, record.failure
    shown = launch_text(bot)
    # The message says why the tag is there.
    assert "may terminate, only instances that carry the request's tag" in shown
    line = html.unescape(shown.split("```")[1])
    method, params = cli_params(line, ec2(bot), {"<ami-id>": "ami-0123456789abcdef0"})
    assert method == "run_instances"
    launched = getattr(ec2(bot), method)(**params)["Instances"][0]["InstanceId"]
    tags = {
        t["Key"]: t["Value"]
        for r in ec2(bot).describe_instances(InstanceIds=[launched])["Reservations"]
        for i in r["Instances"]
        for t in i.get("Tags", [])
    }
    assert tags.get(REQUEST_TAG) == request_id
    bot.clock.set(record.reservation.end + timedelta(minutes=5))
    bot.wait()
    prompt = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER][-1]
    if pick.startswith("capacity-block"):
        # AWS terminated it 30 minutes before the block's end: nothing is left to clean.
        assert "is cleaned up: nothing tagged for it is left" in prompt.text_of_blocks()
        (gone,) = [
            i["State"]["Name"]
            for r in ec2(bot).describe_instances(InstanceIds=[launched])["Reservations"]
            for i in r["Instances"]
        ]
        assert gone == "terminated"
        return
    # After the window the cleanup lists it as the request's and terminates it.
    mine, _, _left_alone = prompt.text_of_blocks().partition("Not ours, left alone")
    assert launched in mine
    bot.click(ActionId.CLEANUP_NOW.value, request_id, REQUESTER)
    bot.wait()
    (state,) = [
        i["State"]["Name"]
        for r in ec2(bot).describe_instances(InstanceIds=[launched])["Reservations"]
        for i in r["Instances"]
    ]
    assert state in ("shutting-down", "terminated")


def ec2(bot: BotUnderTest) -> Any:
    return bot.aws("us-east-1").ec2


def launch(bot: BotUnderTest, count: int, tags: dict[str, str], target: str | None) -> list[str]:
    params: dict[str, Any] = {
        "InstanceType": "p5.48xlarge",
        "MinCount": count,
        "MaxCount": count,
        "ImageId": "ami-0123456789abcdef0",
    }
    if tags:
        params["TagSpecifications"] = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
    if target:
        params["CapacityReservationSpecification"] = {
            "CapacityReservationTarget": {"CapacityReservationId": target}
        }
    return [i["InstanceId"] for i in ec2(bot).run_instances(**params)["Instances"]]


def test_the_reservation_is_made_in_a_zone_that_sells_the_type(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _request_id, reservation = reservation_bought(bot)
    zones = ec2(bot).describe_availability_zones()["AvailabilityZones"]
    first = zones[0]
    assert first["ZoneType"] == "local-zone"  # what "the first zone returned" would pick
    selling = {
        o["Location"]
        for o in ec2(bot).describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]}],
        )["InstanceTypeOfferings"]
    }
    assert "us-east-1a" not in selling  # the first Availability Zone does not sell it
    assert reservation.availability_zone in selling
    (raw,) = ec2(bot).describe_capacity_reservations(CapacityReservationIds=[reservation.id])[
        "CapacityReservations"
    ]
    assert raw["InstanceMatchCriteria"] == "targeted"


def test_an_instance_that_does_not_name_the_reservation_does_not_use_it_up(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _request_id, reservation = reservation_bought(bot)
    # Someone launches the same type in the same zone without naming the reservation:
    # with `open` matching it would run in (and use up) the paid capacity.
    params = {"Placement": {"AvailabilityZone": reservation.availability_zone}}
    ec2(bot).run_instances(InstanceType="p5.48xlarge", MinCount=1, MaxCount=1, **params)
    (raw,) = ec2(bot).describe_capacity_reservations(CapacityReservationIds=[reservation.id])[
        "CapacityReservations"
    ]
    assert raw["AvailableInstanceCount"] == raw["TotalInstanceCount"] == 2


def test_cleanup_of_a_reservation_terminates_nothing_untagged(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id, reservation = reservation_bought(bot)
    ours = launch(bot, 1, {"gpu-bot:request-id": request_id}, reservation.id)
    theirs = launch(bot, 1, {}, reservation.id)  # in our reservation, not ours
    other = launch(bot, 1, {"gpu-bot:request-id": "R99"}, None)  # another request's
    bot.clock.set(reservation.end + timedelta(minutes=5))
    bot.wait()
    prompt = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == REQUESTER][-1]
    text = prompt.text_of_blocks()
    mine, _, left_alone = text.partition("Not ours, left alone")
    assert ours[0] in mine and theirs[0] in left_alone and other[0] not in text
    bot.click(ActionId.CLEANUP_NOW.value, request_id, REQUESTER)
    bot.wait()
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in ec2(bot).describe_instances()["Reservations"]
        for i in r["Instances"]
    }
    assert states[ours[0]] in ("shutting-down", "terminated")
    assert states[theirs[0]] == "running" and states[other[0]] == "running"
    bot.clock.advance(timedelta(minutes=3))
    bot.wait()
    assert bot.record(request_id).state is State.CLEANED_UP  # nothing of ours is left


def test_the_256_limit_counts_blocks_in_every_region_the_bot_buys_in(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    west = bot.aws("us-west-2").ec2
    for count in (64, 64, 64, 63):  # 255 booked in us-west-2, none in us-east-1
        offer = west.describe_capacity_block_offerings(
            InstanceType="p5.48xlarge", InstanceCount=count, CapacityDurationHours=24
        )["CapacityBlockOfferings"][0]
        with as_someone_else(bot):  # blocks the organisation bought without the bot
            west.purchase_capacity_block(
                CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
                InstancePlatform="Linux/UNIX",
            )
    before = bot.purchase_calls()
    request_id = submitted(bot, BLOCK)  # 2 more in us-east-1: 257
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.QUOTED
    assert record.failure is not None and "255 of 256" in record.failure
    assert "us-west-2" in record.failure  # the text says where it counted
    assert bot.purchase_calls() == before


def test_the_intake_keeps_a_replays_key_for_the_whole_replay_window(make_bot) -> None:  # type: ignore[no-untyped-def]
    from bot.adapters.slack.inbound import REPLAY_WINDOW_SECONDS

    bot = make_bot()
    reply, _ = bot.command("reserve 2x p5.48xlarge 3d from 2026-12-14 ec2")
    assert reply.status == 200
    bot.wait()
    store: Any = bot.services.store
    keys = list(store.redis.scan_iter(match=store.key("once", "*")))
    assert keys, "the intake remembered nothing"
    for key in keys:
        # A replay is signed as the original for 5 minutes (more with clock skew): the
        # key must outlive that, not a moment.
        assert store.redis.pttl(key) > (REPLAY_WINDOW_SECONDS - 60) * 1000


def selling_zones(bot: BotUnderTest) -> list[str]:
    return sorted(
        o["Location"]
        for o in ec2(bot).describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]}],
        )["InstanceTypeOfferings"]
    )


def test_a_reservation_with_no_capacity_in_one_zone_is_made_in_the_next(
    make_bot, sdk_retry_pauses: list[float]
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    first, second, *_ = selling_zones(bot)
    bot.market.conditions.no_capacity_in(first, "p5.48xlarge")
    before = bot.purchase_calls()
    request_id, reservation = reservation_bought(bot)
    assert reservation.availability_zone == second
    # The refusal came as EC2 sends it (a 5xx) and went through botocore's own retries:
    # five sends to the first zone (four pauses), then one to the second.
    assert bot.purchase_calls() - before == 6
    assert len(sdk_retry_pauses) >= 4
    assert bot.market.bought()["on-demand-reservation"] == 1
    (raw,) = ec2(bot).describe_capacity_reservations()["CapacityReservations"]
    assert raw["AvailabilityZone"] == second
    assert {t["Key"]: t["Value"] for t in raw["Tags"]}[REQUEST_TAG] == request_id


def test_no_zone_with_capacity_reserves_nothing_and_says_so(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    zones = selling_zones(bot)
    for zone in zones:
        bot.market.conditions.no_capacity_in(zone, "p5.48xlarge")
    request_id = submitted(bot, BLOCK, pick="on-demand-reservation:0")
    approve(bot, request_id)
    bot.clock.set(bot.record(request_id).request.start - timedelta(minutes=5))
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.QUOTED and record.reservation is None
    assert bot.market.bought()["on-demand-reservation"] == 0
    assert record.failure is not None
    assert "no Availability Zone of us-east-1 had capacity" in record.failure
    assert all(zone in record.failure for zone in zones)
    told = [
        str(c.args.get("text", ""))
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == REQUESTER and "was not bought" in str(c.args.get("text", ""))
    ]
    assert len(told) == 1 and "nothing was reserved" in told[0]


AHEAD = '1x g6e.12xlarge 3d from 2026-12-14 ec2 reason="load test"'  # 14 days ahead


def test_a_g_type_odcr_is_asked_ahead_and_held_from_its_start(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot, AHEAD, pick="on-demand-reservation:0")
    approve(bot, request_id)
    record = bot.record(request_id)
    # Asked at approval, two weeks before the window, as a future-dated reservation.
    assert record.reservation is not None and record.reservation.state == "assessing"
    (raw,) = ec2(bot).describe_capacity_reservations()["CapacityReservations"]
    assert raw["StartDate"] == record.request.start
    assert raw["CommitmentInfo"]["CommitmentEndDate"] == record.request.end
    bot.clock.advance(2 * H)
    bot.wait()
    assert bot.record(request_id).state is State.SCHEDULED
    bot.clock.set(record.request.start + timedelta(minutes=1))
    bot.wait()
    assert bot.record(request_id).state is State.ACTIVE
    assert bot.market.bought()["on-demand-reservation"] == 1


def test_a_future_dated_reservation_aws_declines_fails_and_tells_the_requester(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    bot.market.conditions.future_reservations_declined = True
    request_id = submitted(bot, AHEAD, pick="on-demand-reservation:0")
    approve(bot, request_id)
    assert bot.record(request_id).reservation.state == "assessing"  # type: ignore[union-attr]
    bot.clock.advance(2 * H)
    bot.wait()
    record = bot.record(request_id)
    assert record.state is State.FAILED
    assert record.failure is not None and "came back unsupported" in record.failure
    told = [
        str(c.args.get("text", ""))
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == REQUESTER and "declined to reserve" in str(c.args.get("text", ""))
    ]
    assert len(told) == 1 and "nothing is held and nothing is billed" in told[0]
