"""Watches for capacity at scale: 1,000 watches over 20 distinct questions on the sandbox
market.

    python -m benchmarks.watches                      # 1,000 watches, 20 questions, 5 rounds
    python -m benchmarks.watches --watches 200 --questions 10 --rounds 3

Two parts:

1. Rounds (one process, manual clock): AWS calls per round and the median time of a
   round, next to the naive baseline measured in the same run (each watch asking AWS for
   itself: one call per watch). Target: at most one call per distinct question.
2. Exactly once through a SIGKILL: two worker processes (real clock) run the rounds and
   deliver the matches to the fake Web API; the first is SIGKILLed as soon as the first
   matches arrive (its rounds and deliveries in flight) and a new worker replaces it. Every
   watch must get its match once: 0 duplicates, 0 lost, counted at the fake Web API.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.adapters.clock import ManualClock
from bot.adapters.slack.local_api import LocalSlackApi
from bot.app import Wiring, build_services
from bot.config import load_settings
from bot.domain.watch import questions
from bot.services.jobs import RetryLater
from bot.services.watching import WATCH_ROUND
from tests.conftest import start_redis_server

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("p5.48xlarge", "p4d.24xlarge", "p5en.48xlarge", "trn1.32xlarge", "p4de.24xlarge")
DURATIONS = ("1d", "2d", "3d", "7d")
MATCH_KEY = "watch-match:"


def _env(redis_url: str, namespace: str, fake: LocalSlackApi) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "GPU_BOT_NAMESPACE": namespace,
        "SLACK_API_URL": fake.api_url,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "GPU_BOT_AWS": "sandbox",
        "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
        "GPU_BOT_DELIVERY_SETTLE": "2s",
        # One watcher per watch, more watches than the default total, and every question
        # asked in its round: this measures the sharing of questions, not the limits.
        "GPU_BOT_WATCHES_TOTAL": "100000",
        "GPU_BOT_WATCH_SEARCHES_PER_MINUTE": "600",
    }


def texts(count: int, distinct: int, start: datetime) -> Iterator[tuple[str, str]]:
    """(watcher, watch text): `count` watches asking `distinct` questions, each watcher
    with a price cap of their own (judged on the shared answer)."""
    for n in range(count):
        q = n % distinct
        kind, duration = TYPES[q % len(TYPES)], DURATIONS[(q // len(TYPES)) % len(DURATIONS)]
        day = (start + timedelta(days=q // (len(TYPES) * len(DURATIONS)))).date().isoformat()
        cap = 60 + n % 40
        yield f"U{n:08d}", f"1x {kind} {duration} from {day} flex=7d us-east-1 ec2 max={cap}/h"


def seed(services: Wiring, count: int, distinct: int, start: datetime) -> int:
    """Store the watches; returns how many distinct questions they ask."""
    asked: set[str] = set()
    for user, text in texts(count, distinct, start):
        made = services.watches.check(user, text)
        services.watches.create(made)
        asked |= {q.key for q in made.asked}
    return len(asked)


@contextmanager
def redis_and_slack() -> Iterator[tuple[str, LocalSlackApi]]:
    proc, url, _port, _workdir = start_redis_server()
    fake = LocalSlackApi()
    fake.keep_calls = False
    try:
        yield url, fake
    finally:
        fake.close()
        proc.terminate()
        proc.wait(timeout=30)


# --- part 1: rounds ------------------------------------------------------------------------


def _due_rounds(services: Wiring) -> list[dict[str, Any]]:
    store = services.store
    now = services.clock.now()
    ids = store.redis.zrangebyscore(store.key("due"), "-inf", now.timestamp())
    rounds = [i for i in ids if str(i).startswith(f"{WATCH_ROUND.name}:")]
    raw = store.redis.hmget(store.key("jobs"), rounds) if rounds else []
    return [json.loads(r)["payload"] for r in raw if r]


def one_round(services: Wiring) -> tuple[int, float]:
    """Every question's round due now, run as the worker runs it: (AWS calls, seconds)."""
    before = services.watch_search.calls
    began = time.perf_counter()
    for payload in _due_rounds(services):
        try:
            services.jobs.run(WATCH_ROUND.name, payload)
        except RetryLater as later:
            job_id = payload["job"]
            services.store.redis.zadd(services.store.key("due"), {job_id: later.at.timestamp()})
    return services.watch_search.calls - before, time.perf_counter() - began


def naive_round(services: Wiring) -> tuple[int, float]:
    """The baseline: each watch asks AWS its own question."""
    before = services.watch_search.calls
    began = time.perf_counter()
    now = services.clock.now()
    for watch in services.watches.watches.watches(live_only=True):
        for question in questions(watch, services.watches.regions(watch)):
            services.watch_search.search(question, None, now)
    return services.watch_search.calls - before, time.perf_counter() - began


def rounds(count: int, distinct: int, n_rounds: int) -> dict[str, float]:
    with redis_and_slack() as (url, fake):
        env = _env(url, f"bench-{uuid.uuid4().hex[:8]}", fake)
        clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
        services = build_services(load_settings(**env), clock=clock)
        start = clock.now() + timedelta(days=10)
        asked = seed(services, count, distinct, start)
        calls, seconds, naive_calls, naive_seconds = [], [], [], []
        for _ in range(n_rounds):
            c, s = one_round(services)
            calls.append(c)
            seconds.append(s)
            nc, ns = naive_round(services)
            naive_calls.append(nc)
            naive_seconds.append(ns)
            clock.advance(timedelta(hours=1))  # 10 days ahead: a round an hour
        services.close()
    return {
        "watches": count,
        "questions": asked,
        "calls_per_round": max(calls),
        "naive_calls_per_round": statistics.median(naive_calls),
        "round_s_median": statistics.median(seconds),
        "naive_round_s_median": statistics.median(naive_seconds),
    }


# --- part 2: exactly once through a SIGKILL ------------------------------------------------


def start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    full = {
        **os.environ,
        **env,
        "WORKER_LEASE_SECONDS": "3",
        "WORKER_CONCURRENCY": "8",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.worker_process"],
        cwd=ROOT,
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def once_through_a_kill(count: int, distinct: int, patience: float = 900.0) -> dict[str, float]:
    """Watches that all match at once (the market has their blocks), two workers, the
    first SIGKILLed when the first matches arrive; what the fake Web API received."""
    with redis_and_slack() as (url, fake):
        env = _env(url, f"bench-{uuid.uuid4().hex[:8]}", fake)
        services = build_services(load_settings(**env))
        seed(services, count, distinct, datetime.now(UTC) + timedelta(days=10))
        services.close()
        began = time.monotonic()
        procs = [start_worker(env), start_worker(env)]
        killed = False
        try:
            while time.monotonic() - began < patience:
                got = sum(1 for k in fake.delivery_keys() if k.startswith(MATCH_KEY))
                if not killed and got >= 1:
                    procs[0].send_signal(signal.SIGKILL)
                    procs.append(start_worker(env))
                    killed = True
                if got >= count:
                    break
                time.sleep(0.2)
            elapsed = time.monotonic() - began
            time.sleep(4.0)  # past the lease: a late duplicate would show now
            keys = Counter(k for k in fake.delivery_keys() if k.startswith(MATCH_KEY))
            per_watch = Counter(k.split(":")[1] for k in keys)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                p.wait(timeout=30)
    return {
        "watches": count,
        "delivered": len(per_watch),
        "duplicates": sum(n - 1 for n in keys.values() if n > 1)
        + sum(n - 1 for n in per_watch.values() if n > 1),
        "lost": count - len(per_watch),
        "seconds": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watches", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kill-watches", type=int, default=None, help="default: --watches")
    args = parser.parse_args()
    r = rounds(args.watches, args.questions, args.rounds)
    print(
        f"rounds: {r['watches']} watches, {r['questions']} distinct questions; "
        f"AWS calls per round {r['calls_per_round']} (naive: {r['naive_calls_per_round']:.0f}, "
        f"{r['naive_calls_per_round'] / max(r['calls_per_round'], 1):.0f}x more); "
        f"median round {r['round_s_median'] * 1000:.0f} ms "
        f"(naive: {r['naive_round_s_median'] * 1000:.0f} ms, "
        f"{r['naive_round_s_median'] / max(r['round_s_median'], 1e-9):.1f}x)"
    )
    k = once_through_a_kill(args.kill_watches or args.watches, args.questions)
    print(
        f"SIGKILL: {k['watches']} watches, {k['delivered']:.0f} matches delivered in "
        f"{k['seconds']:.0f} s with a worker SIGKILLed mid-round; duplicates "
        f"{k['duplicates']:.0f}, lost {k['lost']:.0f}"
    )
    ok = r["calls_per_round"] <= r["questions"] and k["duplicates"] == 0 and k["lost"] == 0
    print("verdict:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
