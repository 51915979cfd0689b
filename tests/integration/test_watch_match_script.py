"""watch_match.lua on its own, on a real Redis. A round checks `better` before it asks the
store, so the script's own rules decide only when two rounds race (a worker's lease ran
out mid-round): here they are asked directly, each with the same last match sent.

- an offering already sent is never recorded again, even when it would be better than
  the last one sent;
- a match is better when it starts strictly earlier than the last sent, or costs at least
  5% less (BETTER_BY);
- nothing is recorded for a watch that is no longer watching.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.adapters.store import RedisStore
from bot.adapters.store.watches import RedisWatches
from bot.domain.audit import BOT, AuditEntry
from bot.domain.watch import BETTER_BY, Sent, Watch, WatchLimits, WatchState
from bot.services.ports import Job
from tests.factories import NOW, make_request

START = NOW + timedelta(days=14)
MIN = timedelta(minutes=1)


@pytest.fixture
def watches(redis_store: RedisStore) -> RedisWatches:
    made = RedisWatches(redis_store)
    watch = Watch(
        id="W1",
        watcher="U0WATCHER",
        request=make_request(start=START),
        until=START,
        created_at=NOW,
    )
    end = Job(id="watch-end:W1", kind="watch-end", due=START, payload={"watch": "W1"})
    made.create_watch(watch, [], end, WatchLimits(per_person=1, total=1, searches_per_window=1))
    return made


def _match(watches: RedisWatches, offering: str, start: timedelta, fee: float) -> bool:
    """Ask the script to record `offering` (starting `start` after START, costing `fee`)
    as the watch's next match; whether it did."""
    sent = Sent(offering_id=offering, region="us-east-1", start=START + start, upfront_usd=fee)
    job = Job(id=f"watch-match:W1:{offering}", kind="watch-match", due=NOW, payload={})
    audit = AuditEntry("W1", BOT, "match sent", "watching", "watching", NOW, usd=fee)
    return watches.record_match("W1", sent, BETTER_BY, job, audit)


def _recorded(watches: RedisWatches, store: RedisStore) -> list[str]:
    """The offerings recorded, as the watch keeps them (the last one last); each has its
    message job scheduled and its audit entry."""
    watch = watches.get_watch("W1")
    assert watch is not None
    ids = [s.offering_id for s in watch.sent]
    scheduled = {i for i in ids if store.due_at(f"watch-match:W1:{i}") is not None}
    assert scheduled == set(ids)
    assert len(watches.watch_audit("W1")) == len(ids)
    return ids


def test_an_offering_already_sent_is_never_recorded_again(
    watches: RedisWatches, redis_store: RedisStore
) -> None:
    assert _match(watches, "cb-a", 3 * MIN, 1000.0)
    assert _match(watches, "cb-b", 5 * MIN, 800.0)  # 20% cheaper, later
    # cb-a again: it starts earlier than cb-b, the last sent, so it would be "better".
    assert not _match(watches, "cb-a", 3 * MIN, 1000.0)
    assert not _match(watches, "cb-a", 0 * MIN, 10.0)  # even cheaper and earlier now
    assert _recorded(watches, redis_store) == ["cb-a", "cb-b"]


@pytest.mark.parametrize(
    ("start", "fee", "recorded"),
    [
        (0 * MIN, 1000.0, False),  # the same start and fee
        (0 * MIN, 951.0, False),  # 4.9% cheaper
        (0 * MIN, 950.0, True),  # 5% cheaper exactly
        (10 * MIN, 949.0, True),  # later, but more than 5% cheaper
        (10 * MIN, 960.0, False),  # later and only 4% cheaper
        (-MIN, 2000.0, True),  # a minute earlier, however dear
        (MIN, 999.0, False),  # a minute later
    ],
    ids=[
        "same",
        "4.9%-cheaper",
        "5%-cheaper",
        "later-5.1%-cheaper",
        "later-4%-cheaper",
        "earlier-dearer",
        "later",
    ],
)
def test_a_match_is_better_when_it_starts_earlier_or_costs_at_least_5_percent_less(
    watches: RedisWatches, redis_store: RedisStore, start: timedelta, fee: float, recorded: bool
) -> None:
    assert _match(watches, "cb-first", 0 * MIN, 1000.0)
    assert _match(watches, "cb-next", start, fee) is recorded
    expected = ["cb-first", "cb-next"] if recorded else ["cb-first"]
    assert _recorded(watches, redis_store) == expected


@pytest.mark.parametrize("state", [WatchState.STOPPED, WatchState.ENDED])
def test_nothing_is_recorded_for_a_watch_that_is_not_watching(
    watches: RedisWatches, redis_store: RedisStore, state: WatchState
) -> None:
    assert watches.set_state("W1", state, "stopped by its watcher", [])
    assert not _match(watches, "cb-a", 0 * MIN, 1000.0)
    assert _recorded(watches, redis_store) == []
    assert redis_store.due_at("watch-match:W1:cb-a") is None
