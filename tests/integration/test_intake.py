"""New requests and quotes are handed to the intake before the ack and stored a moment
later by one thread, many per Redis round trip (bot.after_ack.Lane): each stored once
per Slack delivery, each request created once even when its job runs twice, and a
failure to store told to the person (tests/integration/test_slack_edges.py)."""

from __future__ import annotations

import functools
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from bot.adapters.store import RedisStore
from bot.after_ack import AfterAck
from bot.domain.lifecycle import State
from bot.domain.request import CapacityRequest
from bot.services.jobs import OpenJob, open_job, quote_only_job
from bot.services.ports import Intake
from tests import slack_payloads as payloads
from tests.factories import NOW
from tests.slack_harness import REQUESTER, SECRET

RESERVE = "reserve 2x p5.48xlarge 3d from 2026-12-14 ec2"


def _until(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


# --- the lane ---------------------------------------------------------------------------


def test_what_is_put_while_the_lane_is_busy_goes_in_one_flush() -> None:
    after = AfterAck()
    gate = threading.Event()
    batches: list[list[int]] = []

    def flush(items: list[int]) -> None:
        batches.append(list(items))
        gate.wait(5)

    lane = after.lane(flush, "test-lane")
    lane.put(0)
    _until(lambda: len(batches) == 1)
    for i in range(1, 50):
        lane.put(i)
    assert not after.wait_idle(0)  # busy (its flush is held): waiting covers the lane
    gate.set()
    assert after.wait_idle(5)
    assert batches == [[0], list(range(1, 50))]
    after.shutdown()


def test_a_failed_flush_is_told_to_each_item_and_the_lane_goes_on() -> None:
    after = AfterAck()
    outcomes = iter([ConnectionError("Connection refused"), None])
    told: list[tuple[str, str]] = []
    flushed: list[str] = []

    def flush(items: list[str]) -> None:
        failure = next(outcomes)
        if failure is not None:
            raise failure
        flushed.extend(items)

    lane = after.lane(flush, "test-lane")
    lane.put("a", on_error=lambda exc: told.append(("a", str(exc))))
    assert after.wait_idle(5)
    lane.put("b", on_error=lambda exc: told.append(("b", str(exc))))
    assert after.wait_idle(5)
    assert told == [("a", "Connection refused")]
    assert flushed == ["b"]
    after.shutdown()


def test_shutdown_stores_what_is_queued_then_refuses_more() -> None:
    after = AfterAck()
    gate = threading.Event()
    flushed: list[int] = []
    lane = after.lane(lambda items: (gate.wait(5), flushed.extend(items)), "test-lane")
    for i in range(3):
        lane.put(i)
    gate.set()
    after.shutdown(wait=True)
    assert flushed == [0, 1, 2]
    with pytest.raises(RuntimeError, match="closed"):
        lane.put(3)


# --- the store --------------------------------------------------------------------------


def test_a_once_key_seen_before_drops_its_job_and_a_worker_is_woken(
    redis_store: RedisStore,
) -> None:
    request = _request()
    jobs = [quote_only_job("U1", request, NOW, None) for _ in range(4)]
    first = [Intake(jobs[0], "delivery:s1"), Intake(jobs[1], "delivery:s1"), Intake(jobs[2])]
    assert redis_store.schedule_once(first) == 2
    assert redis_store.wait_for_work(0.5)
    assert redis_store.schedule_once([Intake(jobs[3], "delivery:s1")]) == 0  # a later replay
    claimed = redis_store.claim_due(NOW + timedelta(seconds=1), timedelta(minutes=1), limit=10)
    assert {job.id for job in claimed} == {jobs[0].id, jobs[2].id}
    assert redis_store.schedule_once([]) == 0


def test_a_remembered_once_key_is_forgotten_after_its_window(redis_store: RedisStore) -> None:
    job = quote_only_job("U1", _request(), NOW, None)
    assert redis_store.schedule_once([Intake(job, "delivery:s2")], remember_seconds=1) == 1
    remembered = redis_store.key("once", "delivery:s2")
    assert 0 < redis_store.redis.pttl(remembered) <= 1000  # Redis forgets it at its window
    _until(lambda: not redis_store.redis.exists(remembered))
    again = quote_only_job("U1", _request(), NOW, None)
    assert redis_store.schedule_once([Intake(again, "delivery:s2")], remember_seconds=1) == 1


# --- through Slack ----------------------------------------------------------------------


def test_an_open_job_run_twice_creates_one_request(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    job = open_job(REQUESTER, _request(), NOW, None)
    payload = OpenJob.model_validate(job.payload)
    first = bot.services.requests.create_draft(payload)  # its worker dies before the ack
    second = bot.services.requests.create_draft(payload)  # the job runs again
    assert first is not None
    assert second is None
    store = bot.services.store
    assert store.ids_in_state(State.DRAFT) == [first.id]
    assert [e.action for e in store.audit(first.id)] == ["created"]
    assert store.next_due() is not None  # its quote, queued with it


def test_a_signed_reserve_delivered_three_times_makes_one_request_and_one_comparison(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    bot = make_bot()
    token, url = bot.new_response_url()
    body, ctype = payloads.slash_command(RESERVE, REQUESTER, url)
    headers = payloads.sign(SECRET, body)
    replies = [bot.post(body, ctype, signed=False, headers=headers) for _ in range(3)]
    assert all(r.status == 200 and "Comparing options" in r.body for r in replies)
    bot.wait()
    (record,) = bot.services.store.for_user(REQUESTER)
    assert record.state is State.QUOTED
    (comparison,) = bot.responses(token)
    assert record.id in str(comparison)


def test_many_reserves_at_once_each_become_one_request(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    replies: list[Any] = []
    threads = [
        threading.Thread(target=lambda: replies.append(bot.command(RESERVE)[0])) for _ in range(24)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status for r in replies] == [200] * 24
    bot.wait()
    records = bot.services.store.for_user(REQUESTER, limit=100)
    assert len(records) == 24
    assert len({r.id for r in records}) == 24
    assert {r.state for r in records} == {State.QUOTED}


@functools.cache
def _request() -> CapacityRequest:
    from bot.adapters.clock import ManualClock
    from bot.app import build_services
    from bot.config import load_settings

    services = build_services(load_settings(REDIS_URL="memory://"), clock=ManualClock(NOW))
    return services.quotes.complete(services.quotes.parse(RESERVE.removeprefix("reserve ")))


def test_a_handed_in_reserve_is_parsed_once(make_bot, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    quotes = bot.services.quotes
    parse = quotes.parse
    texts: list[str] = []

    def counted(text: str) -> Any:
        texts.append(text)
        return parse(text)

    monkeypatch.setattr(quotes, "parse", counted)
    reply, _token = bot.command(RESERVE)
    assert "Comparing options" in reply.body
    assert texts == [RESERVE.removeprefix("reserve ")]  # by the front's check, not again
    bot.command("reserve 2x p5.48xlarge")  # opens the form: parsed by the listener too
    assert len(texts) == 3
    bot.wait()
