"""The job worker on a real Redis: unknown jobs, failures, retries, two workers."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from bot.services.ports import Job
from bot.worker import MAX_ATTEMPTS, Worker, backoff
from tests.slack_harness import BotUnderTest


def test_an_unknown_job_is_dropped_not_retried(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    store = bot.services.store
    store.schedule(Job(id="mystery:1", due=bot.clock.now(), payload={}))
    worker = Worker(bot.services)
    assert worker.run_once() == 1
    bot.clock.advance(timedelta(hours=2))
    assert worker.run_once() == 0


def test_a_failing_job_is_retried_with_backoff_then_buried(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    worker = Worker(bot.services)
    seen: list[dict[str, Any]] = []

    def flaky(payload: dict[str, Any]) -> None:
        seen.append(payload)
        raise RuntimeError("AWS is down")

    worker.handlers["flaky"] = flaky
    bot.services.store.schedule(Job(id="flaky:1", due=bot.clock.now(), payload={"x": 1}))
    assert worker.run_once() == 1
    assert seen[-1] == {"x": 1}
    bot.clock.advance(backoff(1) - timedelta(seconds=1))
    assert worker.run_once() == 0  # not before its backoff
    for attempt in range(1, MAX_ATTEMPTS):
        bot.clock.advance(backoff(attempt) + timedelta(seconds=1))
        assert worker.run_once() == 1
        assert seen[-1] == {"x": 1, "attempt": attempt}
    assert "flaky:1" in bot.services.store.dead_jobs()
    bot.clock.advance(timedelta(days=1))
    assert worker.run_once() == 0


def test_two_workers_never_run_the_same_job_at_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    running = threading.Event()
    release = threading.Event()
    runs: list[str] = []

    def slow(payload: dict[str, Any]) -> None:
        runs.append(str(payload["n"]))
        running.set()
        release.wait(10)

    first, second = Worker(bot.services), Worker(bot.services)
    for worker in (first, second):
        worker.handlers["slow"] = slow
    store = bot.services.store
    store.schedule(Job(id="slow:R1", due=bot.clock.now(), payload={"n": 1}))
    thread = threading.Thread(target=first.run_once)
    thread.start()
    assert running.wait(10)
    store.schedule(Job(id="slow:R1", due=bot.clock.now(), payload={"n": 2}))  # again, now
    assert second.run_once() == 0  # it waits for the first run to finish
    release.set()
    thread.join(10)
    second.run_once()  # whichever worker gets to it, the second occurrence runs after
    assert runs == ["1", "2"]
