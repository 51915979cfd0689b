"""The long-running worker on a real Redis: batch claims, concurrent runs, lease
extension, and a clean stop on SIGTERM in a real `gpu-bot worker` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel

from bot.adapters.store import RedisStore
from bot.services.jobs import JobKind, quote_only_job
from bot.services.ports import ClaimedJob
from bot.worker import Worker
from tests.factories import make_request
from tests.slack_harness import BotUnderTest


class Numbered(BaseModel):
    n: int


@contextmanager
def running(worker: Worker) -> Iterator[threading.Event]:
    stop = threading.Event()
    thread = worker.start_thread(stop)
    try:
        yield stop
    finally:
        stop.set()
        thread.join(30)
        assert not thread.is_alive()


def wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.01)
    raise AssertionError("timed out waiting")


def test_jobs_run_concurrently_inside_one_worker(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    together = threading.Barrier(4, timeout=10)  # only passes if four run at once
    passed: list[int] = []

    def meet(payload: Numbered) -> None:
        together.wait()
        passed.append(payload.n)

    kind = JobKind("meet", Numbered)
    bot.services.jobs.register(kind, meet)
    for n in range(4):
        bot.services.store.schedule(kind.job(str(n), bot.clock.now(), Numbered(n=n)))
    with running(Worker(bot.services, concurrency=4, batch=4)):
        wait_until(lambda: len(passed) == 4)
    assert sorted(passed) == [0, 1, 2, 3]
    assert bot.services.store.claim_due(bot.clock.now(), timedelta(minutes=1)) == []


class CountingStore(RedisStore):
    def __init__(self, store: RedisStore) -> None:
        super().__init__(store.redis, namespace=store.prefix.strip("{}"))
        self.claims: list[int] = []
        self.acks: list[int] = []

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 10) -> list[ClaimedJob]:
        jobs = super().claim_due(now, lease, limit)
        if jobs:
            self.claims.append(len(jobs))
        return jobs

    def ack_many(self, jobs: Sequence[ClaimedJob]) -> list[bool]:
        if jobs:
            self.acks.append(len(jobs))
        return super().ack_many(jobs)


def test_jobs_are_claimed_and_acked_in_batches_each_run_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    store = CountingStore(bot.services.store)
    bot.services.store = store
    runs: Counter[int] = Counter()
    lock = threading.Lock()

    def count(payload: Numbered) -> None:
        time.sleep(0.002)  # a short wait, as on HTTP
        with lock:
            runs[payload.n] += 1

    kind = JobKind("count", Numbered)
    bot.services.jobs.register(kind, count)
    for n in range(300):
        store.schedule(kind.job(str(n), bot.clock.now(), Numbered(n=n)))
    with running(Worker(bot.services, concurrency=4, batch=20)):
        wait_until(lambda: sum(runs.values()) == 300)
        wait_until(lambda: sum(store.acks) == 300)
    assert runs == Counter(range(300))  # each once
    assert sum(store.claims) == 300
    assert max(store.claims) > 1  # claimed many per round trip
    assert len(store.claims) < 60  # not one round trip per job
    assert len(store.acks) < 300
    assert store.claim_due(bot.clock.now(), timedelta(minutes=1)) == []


def test_a_long_job_keeps_its_lease_while_it_runs(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    started, finish = threading.Event(), threading.Event()
    runs: list[int] = []

    def long(payload: Numbered) -> None:
        runs.append(payload.n)
        started.set()
        finish.wait(20)

    kind = JobKind("long", Numbered)
    bot.services.jobs.register(kind, long)
    store = bot.services.store
    store.schedule(kind.job("1", bot.clock.now(), Numbered(n=1)))
    lease = timedelta(seconds=0.6)  # a heartbeat every 0.2 s
    with running(Worker(bot.services, concurrency=2, lease=lease)):
        assert started.wait(10)
        for _ in range(10):  # four leases' time passes while it runs
            bot.clock.advance(timedelta(seconds=0.25))
            time.sleep(0.4)  # two heartbeats
            assert store.claim_due(bot.clock.now(), lease) == []  # still held
        finish.set()
        wait_until(lambda: not store.redis.zcard(store.key("inflight")))
    assert runs == [1]
    bot.clock.advance(timedelta(hours=1))
    assert store.claim_due(bot.clock.now(), lease) == []  # acked, not given back


def test_a_job_left_running_after_the_grace_is_given_back(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    started, finish = threading.Event(), threading.Event()

    def stuck(_: Numbered) -> None:
        started.set()
        finish.wait(20)

    kind = JobKind("stuck", Numbered)
    bot.services.jobs.register(kind, stuck)
    store = bot.services.store
    store.schedule(kind.job("1", bot.clock.now(), Numbered(n=1)))
    for n in range(2, 10):  # claimed ahead, never started
        store.schedule(kind.job(str(n), bot.clock.now(), Numbered(n=n)))
    worker = Worker(bot.services, concurrency=1, batch=20, grace=0.5)
    with running(worker):
        assert started.wait(10)
    finish.set()
    again = store.claim_due(bot.clock.now(), timedelta(minutes=1), limit=100)
    assert sorted(j.id for j in again) == sorted(f"stuck:{n}" for n in range(1, 10))


class SlowResponses:
    """A response_url endpoint that takes `delay` seconds to answer each post."""

    def __init__(self, delay: float) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(delay)
                outer.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def url(self, token: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/response/{token}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.long
def test_sigterm_stops_a_worker_process_without_losing_a_job(
    redis_store: RedisStore, redis_url: str, namespace: str
) -> None:
    """`gpu-bot worker` gets SIGTERM while jobs run: it exits promptly, every job it
    started has finished (posted once), every other one is due again, none is in flight;
    a second worker then runs the rest, each once."""
    slow = SlowResponses(delay=0.5)
    request = make_request()
    now = datetime.now().astimezone()
    for n in range(24):
        redis_store.schedule(quote_only_job("U1", request, now, slow.url(f"job{n}")))
    env = os.environ | {
        "REDIS_URL": redis_url,
        "GPU_BOT_NAMESPACE": namespace,
        "LOG_LEVEL": "WARNING",
        "SLACK_BOT_TOKEN": "xoxb-test",  # a worker refuses to start without them
        "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
        # The bot posts only to https response_urls or to its own Web API's origin.
        "SLACK_API_URL": slow.url("api/").rsplit("/response/", 1)[0] + "/api/",
    }
    argv = [sys.executable, "-m", "bot", "worker", "--concurrency", "4"]
    try:
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE)
        wait_until(lambda: len(slow.paths) >= 2, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.stderr.read().decode() if proc.stderr else ""
        posted = Counter(slow.paths)
        assert posted and max(posted.values()) == 1
        assert len(posted) < 24  # stopped early
        key = redis_store.key
        assert redis_store.redis.zcard(key("inflight")) == 0
        assert redis_store.redis.hlen(key("lease")) == 0
        # ...beside the monthly spend summary's job, which each worker schedules at start.
        assert redis_store.redis.zcard(key("due")) == 24 - len(posted) + 1

        proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE)
        wait_until(lambda: len(slow.paths) == 24, timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert Counter(slow.paths) == Counter(f"/response/job{n}" for n in range(24))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        slow.close()
