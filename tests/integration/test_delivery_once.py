"""OnceOnly on a real Redis and the fake Web API: each outcome of a post, and what the next
run does about it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.adapters.clock import ManualClock
from bot.adapters.slack.poster import SlackPoster, once_only_client
from bot.adapters.store import RedisStore
from bot.services.delivery import OnceOnly
from bot.services.jobs import RetryLater
from bot.services.ports import DeliveryState, Refused
from tests.slack_fake import FakeSlack

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}]
SETTLE = timedelta(seconds=30)


@pytest.fixture
def once(redis_store: RedisStore, clock: ManualClock, fake_slack: FakeSlack) -> OnceOnly:
    poster = SlackPoster(once_only_client("xoxb-test", fake_slack.api_url))
    return OnceOnly(redis_store, poster, clock, settle=SETTLE)


def test_a_key_is_posted_once(once: OnceOnly, fake_slack: FakeSlack, clock: ManualClock) -> None:
    assert once.send("k1", "U0A", "hello", BLOCKS) is not None
    clock.advance(timedelta(minutes=1))
    assert once.send("k1", "U0A", "hello", BLOCKS) is None
    assert fake_slack.delivery_keys() == ["k1"]


def test_a_post_answered_500_after_it_happened_is_found_not_repeated(
    once: OnceOnly, fake_slack: FakeSlack, clock: ManualClock, redis_store: RedisStore
) -> None:
    fake_slack.fail("chat.postMessage", 500, after_effect=True)
    with pytest.raises(RetryLater) as later:
        once.send("k2", "U0A", "hello", BLOCKS)
    assert later.value.at == clock.now() + SETTLE
    record = redis_store.delivery("k2")
    assert record is not None and record.state is DeliveryState.PENDING
    # Too soon to look: another worker might still be posting it.
    clock.advance(timedelta(seconds=10))
    with pytest.raises(RetryLater):
        once.send("k2", "U0A", "hello", BLOCKS)
    assert not fake_slack.of("conversations.history")
    clock.advance(SETTLE)
    assert once.send("k2", "U0A", "hello", BLOCKS) is None
    assert fake_slack.delivery_keys() == ["k2"]
    assert fake_slack.of("conversations.history")
    sent = redis_store.delivery("k2")
    assert sent is not None and sent.state is DeliveryState.SENT and sent.ts


def test_a_post_that_did_not_happen_is_posted_after_looking(
    once: OnceOnly, fake_slack: FakeSlack, clock: ManualClock
) -> None:
    fake_slack.fail("chat.postMessage", 500)
    with pytest.raises(RetryLater):
        once.send("k3", "U0A", "hello", BLOCKS)
    clock.advance(SETTLE)
    assert once.send("k3", "U0A", "hello", BLOCKS) is not None
    assert fake_slack.delivery_keys() == ["k3"]


def test_429_gives_the_job_back_for_retry_after_without_looking(
    once: OnceOnly, fake_slack: FakeSlack, clock: ManualClock
) -> None:
    fake_slack.fail("chat.postMessage", 429, retry_after=7)
    with pytest.raises(RetryLater) as later:
        once.send("k4", "U0A", "hello", BLOCKS)
    assert later.value.at == clock.now() + timedelta(seconds=7)
    clock.advance(timedelta(seconds=7))
    assert once.send("k4", "U0A", "hello", BLOCKS) is not None
    assert not fake_slack.of("conversations.history")
    assert fake_slack.delivery_keys() == ["k4"]


def test_posts_to_one_channel_are_paced_a_second_apart(
    once: OnceOnly, fake_slack: FakeSlack, clock: ManualClock
) -> None:
    assert once.send("a", "C0ROOM", "a", BLOCKS) is not None
    with pytest.raises(RetryLater) as later:
        once.send("b", "C0ROOM", "b", BLOCKS)
    assert later.value.at == clock.now() + timedelta(seconds=1)
    assert once.send("c", "U0OTHER", "c", BLOCKS) is not None  # another channel: not paced
    clock.advance(timedelta(seconds=1))
    assert once.send("b", "C0ROOM", "b", BLOCKS) is not None
    assert sorted(fake_slack.delivery_keys()) == ["a", "b", "c"]


def test_a_refusal_is_raised_and_nothing_is_posted(once: OnceOnly, fake_slack: FakeSlack) -> None:
    fake_slack.fail("chat.postMessage", 404)
    with pytest.raises(Refused):
        once.send("k5", "C0GONE", "hello", BLOCKS)
    assert fake_slack.delivery_keys() == []
