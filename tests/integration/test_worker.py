"""The job worker on a real Redis: unknown jobs, failures, retries, two workers."""

from __future__ import annotations

import threading
from datetime import timedelta

from pydantic import BaseModel

from bot.services.jobs import STANDARD, JobKind, Retries, RetryLater
from bot.services.ports import Job
from bot.worker import Worker
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
    for attempt in range(1, STANDARD.attempts):
        bot.clock.advance(STANDARD.wait(attempt) + timedelta(seconds=1))
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
        if len(runs) < STANDARD.attempts + 2:
            raise RetryLater(bot.clock.now() + timedelta(minutes=10), "capacity not active yet")

    kind = JobKind("poll", Numbered)
    bot.services.jobs.register(kind, not_yet)
    store = bot.services.store
    store.schedule(kind.job("R1", bot.clock.now(), Numbered(n=1)))
    worker = Worker(bot.services)
    for _ in range(STANDARD.attempts + 2):
        assert worker.run_once() == 1
        assert worker.run_once() == 0  # not before the time it asked for
        bot.clock.advance(timedelta(minutes=10))
    assert len(runs) == STANDARD.attempts + 2  # more than the failures allowed, never buried
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
    for attempt in range(1, STANDARD.attempts + 1):
        assert worker.run_once() == 1
        assert worker.run_once() == 0
        bot.clock.advance(max(STANDARD.wait(attempt), timedelta(seconds=30)))
    assert len(runs) == STANDARD.attempts
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
    bot.clock.advance(STANDARD.wait(1) - timedelta(seconds=1))
    assert worker.run_once() == 0  # not before its backoff
    for attempt in range(1, STANDARD.attempts):
        bot.clock.advance(STANDARD.wait(attempt) + timedelta(seconds=1))
        assert worker.run_once() == 1
        assert seen[-1] == Numbered(n=1)  # the attempts are counted beside the payload
    assert len(seen) == STANDARD.attempts
    dead = bot.services.store.dead_jobs()["flaky:1"]
    assert dead["attempt"] == STANDARD.attempts - 1
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


def test_each_kind_is_retried_by_its_own_policy(make_bot) -> None:  # type: ignore[no-untyped-def]
    """A kind that is cheap to lose gives up after its few tries while one that matters
    goes on, each waiting as its own policy says."""
    bot: BotUnderTest = make_bot()
    runs: dict[str, int] = {"picture": 0, "money": 0}

    def failing(name: str):  # type: ignore[no-untyped-def]
        def run(_: Numbered) -> None:
            runs[name] += 1
            raise RuntimeError(f"{name} failed")

        return run

    few = Retries(attempts=2, first=timedelta(minutes=1), longest=timedelta(minutes=1))
    many = Retries(attempts=5, first=timedelta(seconds=10), longest=timedelta(seconds=40))
    picture, money = JobKind("picture", Numbered, few), JobKind("money", Numbered, many)
    bot.services.jobs.register(picture, failing("picture"))
    bot.services.jobs.register(money, failing("money"))
    store = bot.services.store
    store.schedule(picture.job("1", bot.clock.now(), Numbered(n=1)))
    store.schedule(money.job("1", bot.clock.now(), Numbered(n=1)))
    worker = Worker(bot.services)
    assert worker.run_once() == 2
    bot.clock.advance(timedelta(seconds=11))
    assert worker.run_once() == 1  # money's first wait is 10 s, picture's a minute
    for _ in range(20):
        bot.clock.advance(timedelta(seconds=41))
        worker.run_once()
    assert runs == {"picture": 2, "money": 5}
    dead = store.dead_jobs()
    assert dead["picture:1"]["attempt"] == 1 and dead["money:1"]["attempt"] == 4


def test_the_shipped_kinds_have_the_policies_their_comments_give() -> None:
    """A chart gives up after a few tries; a purchase and an extension keep trying for
    about two hours, sooner and more often than the standard policy."""
    from bot.services.extensions import BUY
    from bot.services.jobs import PURCHASE
    from bot.services.notifications import CHART

    assert CHART.retries.attempts < STANDARD.attempts
    for kind in (PURCHASE, BUY):
        waits = [kind.retries.wait(n) for n in range(1, kind.retries.attempts)]
        assert kind.retries.attempts > STANDARD.attempts
        assert kind.retries.first < STANDARD.first
        assert timedelta(hours=1.5) < sum(waits, timedelta()) < timedelta(hours=3)
