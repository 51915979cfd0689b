"""The capacity outlook on a real Redis: what a quote's and a watch round's searches
leave behind (one hash per shape and day, expiring with the window), `/gpu outlook`
through the real app, its chart in a DM thread, and refusals that change nothing."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

from bot.adapters.store import RedisStore
from bot.domain.market import Offering, Origin, PriceSource, ReservationKind
from bot.domain.outlook import Search, Shape
from tests.integration.test_watches import WATCH, hold_everything, later, watched
from tests.slack_harness import REQUESTER, BotUnderTest

SHAPE = Shape(ReservationKind.CAPACITY_BLOCK, "p5.48xlarge", 8, 72)


def _outlook_keys(store: RedisStore) -> list[str]:
    return sorted(store.redis.scan_iter(match=store.key("outlook", "*"), count=1000))


def test_searches_are_kept_per_shape_and_day_until_the_window_ends(
    redis_store: RedisStore,
) -> None:
    at = datetime(2026, 12, 1, 9, tzinfo=UTC)
    searches = [Search(SHAPE, "us-east-1", at + timedelta(hours=h), at, ()) for h in range(3)]
    redis_store.record_searches(searches, keep_days=30)
    (key,) = _outlook_keys(redis_store)
    assert key.endswith(":capacity-block:p5.48xlarge:8:72:2026-12-01")
    assert redis_store.redis.hgetall(key) == {"n|us-east-1": "3", "a|us-east-1|1": "3"}
    found = [_offering(at, days) for days in (12, 9, 30)]
    redis_store.record_searches(
        [Search(SHAPE, "us-east-1", at, at, (o,)) for o in found], keep_days=30
    )
    fields = redis_store.redis.hgetall(key)
    assert fields["l|us-east-1"] == "9"  # the earliest lead seen is kept, not summed
    assert fields["f|us-east-1"] == "3" and fields["n|us-east-1"] == "6"
    expires = redis_store.redis.expiretime(key)
    assert expires == int(datetime(2026, 12, 31, tzinfo=UTC).timestamp())
    days = redis_store.outlook_days([SHAPE], date(2026, 11, 30), date(2026, 12, 2))
    assert list(days) == [date(2026, 12, 1)]
    assert redis_store.outlook_bytes(SHAPE, date(2026, 12, 1)) > 0


def _offering(at: datetime, days: int) -> Offering:
    start = at + timedelta(days=days)
    return Offering(
        kind=ReservationKind.CAPACITY_BLOCK,
        offering_id=f"cb-{days}",
        instance_type="p5.48xlarge",
        count=8,
        start=start,
        end=start + timedelta(hours=72),
        duration_hours=72,
        upfront_usd=8 * 72 * 31.46,
        zone="us-east-1a",
        source=PriceSource(origin=Origin.SANDBOX, detail="test", as_of=at),
    )


def _outlook(bot: BotUnderTest, text: str) -> str:
    reply, token = bot.command(f"outlook {text}")
    assert reply.status == 200
    bot.wait()
    (shown,) = bot.responses(token)
    return json.dumps(shown)


def test_a_quote_and_a_watch_round_are_remembered_and_the_outlook_shows_them(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _reply, _ = bot.command("quote 8x p5.48xlarge 3d from 2026-12-14 us-east-1 ec2")
    bot.wait()
    assert "1 search on 1 day, 1 found something" in _outlook(bot, "8x p5.48xlarge 3d ec2")
    hold_everything(bot)
    watched(bot, WATCH)
    later(bot)
    text = _outlook(bot, "8x p5.48xlarge 3d ec2")
    assert "3 searches on 1 day" in text  # the quote, the watch's first round, the next
    assert "not AWS's capacity" in text
    # the chart: a DM with the outlook, the chart in its thread
    dm = [
        c
        for c in bot.fake.of("chat.postMessage")
        if c.args.get("channel") == REQUESTER and "Capacity outlook" in json.dumps(c.args)
    ]
    assert dm
    shared = list(bot.fake.of("files.completeUploadExternal"))
    assert shared and shared[-1].args.get("thread_ts")


def test_refusals_are_answered_in_the_ack_and_change_nothing(make_bot, redis_store) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    for text, says in (
        ("8x p5.48xlarge 3d region=mars-east-1", "is not an AWS region"),
        ("100x p5.48xlarge 3d", "AWS does not sell 100x p5.48xlarge"),
        ("8x p5.48xlarge 3d days=120", "over the outlook"),
    ):
        reply, token = bot.command(f"outlook {text}")
        assert says in reply.body, reply.body
        bot.wait()
        assert bot.responses(token) == []
    assert _outlook_keys(redis_store) == []


SCAN_SHAPE = "8x p5.48xlarge 3d us-east-1 sagemaker"


def test_the_scan_records_each_round_and_backs_off_as_a_throttled_round_does(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(outlook_shapes=SCAN_SHAPE)
    bot.services.outlook_scan.seed()
    bot.wait()
    assert "1 search on 1 day" in _outlook(bot, "8x p5.48xlarge 3d sagemaker")
    (job_id, due) = bot.services.store.next_due() or ("", None)
    assert job_id == "outlook-scan:round" and due == bot.clock.now() + timedelta(hours=1)
    bot.market.conditions.throttle(100, "SearchTrainingPlanOfferings")
    later(bot, timedelta(hours=1))
    (job_id, due) = bot.services.store.next_due() or ("", None)
    assert job_id == "outlook-scan:round" and due is not None
    assert timedelta(minutes=1) <= due - bot.clock.now() < timedelta(hours=1)  # backed off
    bot.market.conditions.throttle(0, "SearchTrainingPlanOfferings")
    later(bot, timedelta(minutes=5))
    assert "2 searches on 1 day" in _outlook(bot, "8x p5.48xlarge 3d sagemaker")
