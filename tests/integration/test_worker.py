"""The job worker on a real Redis: unknown jobs, failures, retries, two workers."""

from __future__ import annotations

import threading
from datetime import timedelta

from pydantic import BaseModel

from bot.services.jobs import JobKind, RetryLater
from bot.services.ports import Job
from bot.worker import MAX_ATTEMPTS, Worker, backoff
from tests.slack_harness import BotUnderTest


class Numbered(BaseModel):
    n: int = 0


def test_a_job_of_an_unknown_kind_waits_for_a_worker_that_knows_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    """An older worker during a rolling deploy may claim a kind it does not know: it
    gives the job back with backoff rather than dropping it; a worker that knows the
    kind runs it; a kind that nobody knows ends with the dead letters."""
    bot: BotUnderTest = make_bot()
    store = bot.services.store
    store.schedule(Job(id="mystery:1", kind="mystery", due=bot.clock.now(), payload={"n": 3}))
    store.schedule(Job(id="gone:1", kind="gone", due=bot.clock.now(), payload={}))
    worker = Worker(bot.services)
    assert worker.run_once() == 2
    assert worker.run_once() == 0
    seen: list[Numbered] = []
    bot.services.jobs.register(JobKind("mystery", Numbered), seen.append)
    for attempt in range(1, MAX_ATTEMPTS):
        bot.clock.advance(backoff(attempt) + timedelta(seconds=1))
        worker.run_once()
    assert seen == [Numbered(n=3)]
    assert list(store.dead_jobs()) == ["gone:1"]


def test_a_job_with_a_bad_payload_is_buried_at_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.services.jobs.register(JobKind("typed", Numbered), lambda _: None)
    store = bot.services.store
    store.schedule(Job(id="typed:1", kind="typed", due=bot.clock.now(), payload={"n": "x"}))
    assert Worker(bot.services).run_once() == 1
    assert "invalid payload" in store.dead_jobs()["typed:1"]["error"]


def test_a_job_that_asks_to_run_later_is_not_counted_as_failed(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    runs: list[int] = []

    def not_yet(payload: Numbered) -> None:
        runs.append(payload.n)
        if len(runs) < MAX_ATTEMPTS + 2:
            raise RetryLater(bot.clock.now() + timedelta(minutes=10), "capacity not active yet")

    kind = JobKind("poll", Numbered)
    bot.services.jobs.register(kind, not_yet)
    store = bot.services.store
    store.schedule(kind.job("R1", bot.clock.now(), Numbered(n=1)))
    worker = Worker(bot.services)
    for _ in range(MAX_ATTEMPTS + 2):
        assert worker.run_once() == 1
        assert worker.run_once() == 0  # not before the time it asked for
        bot.clock.advance(timedelta(minutes=10))
    assert len(runs) == MAX_ATTEMPTS + 2  # more than the failures allowed, never buried
    assert store.dead_jobs() == {}
    assert worker.run_once() == 0  # it finished


def test_a_failed_give_back_counts_an_attempt_and_ends_with_the_dead_letters(make_bot) -> None:  # type: ignore[no-untyped-def]
    """A post whose outcome stays unknown gives its job back for the time to look, and
    counts as a failure: one failing for ever is buried, not retried for ever."""
    bot: BotUnderTest = make_bot()
    runs: list[int] = []

    def unsure(payload: Numbered) -> None:
        runs.append(payload.n)
        raise RetryLater(bot.clock.now() + timedelta(seconds=30), "outcome unknown", failed=True)

    kind = JobKind("unsure", Numbered)
    bot.services.jobs.register(kind, unsure)
    store = bot.services.store
    store.schedule(kind.job("R1", bot.clock.now(), Numbered(n=1)))
    worker = Worker(bot.services)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert worker.run_once() == 1
        assert worker.run_once() == 0
        bot.clock.advance(max(backoff(attempt), timedelta(seconds=30)))
    assert len(runs) == MAX_ATTEMPTS
    assert store.dead_jobs()["unsure:R1"]["error"] == "outcome unknown"
    assert worker.run_once() == 0


def test_a_failing_job_is_retried_with_backoff_then_buried(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    worker = Worker(bot.services)
    seen: list[Numbered] = []

    def flaky(payload: Numbered) -> None:
        seen.append(payload)
        raise RuntimeError("AWS is down")

    kind = JobKind("flaky", Numbered)
    bot.services.jobs.register(kind, flaky)
    bot.services.store.schedule(kind.job("1", bot.clock.now(), Numbered(n=1)))
    assert worker.run_once() == 1
    assert seen == [Numbered(n=1)]
    bot.clock.advance(backoff(1) - timedelta(seconds=1))
    assert worker.run_once() == 0  # not before its backoff
    for attempt in range(1, MAX_ATTEMPTS):
        bot.clock.advance(backoff(attempt) + timedelta(seconds=1))
        assert worker.run_once() == 1
        assert seen[-1] == Numbered(n=1)  # the attempts are counted beside the payload
    assert len(seen) == MAX_ATTEMPTS
    dead = bot.services.store.dead_jobs()["flaky:1"]
    assert dead["attempt"] == MAX_ATTEMPTS - 1
    assert "AWS is down" in dead["error"]
    bot.clock.advance(timedelta(days=1))
    assert worker.run_once() == 0


def test_two_workers_never_run_the_same_job_at_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    running = threading.Event()
    release = threading.Event()
    runs: list[str] = []

    def slow(payload: Numbered) -> None:
        runs.append(str(payload.n))
        running.set()
        release.wait(10)

    kind = JobKind("slow", Numbered)
    bot.services.jobs.register(kind, slow)
    first, second = Worker(bot.services), Worker(bot.services)
    store = bot.services.store
    store.schedule(kind.job("R1", bot.clock.now(), Numbered(n=1)))
    thread = threading.Thread(target=first.run_once)
    thread.start()
    assert running.wait(10)
    store.schedule(kind.job("R1", bot.clock.now(), Numbered(n=2)))  # again, now
    assert second.run_once() == 0  # it waits for the first run to finish
    release.set()
    thread.join(10)
    second.run_once()  # whichever worker gets to it, the second occurrence runs after
    assert runs == ["1", "2"]
