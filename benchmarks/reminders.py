"""Reminders due at once to that many people, sent by worker processes through the fake
Web API: throughput and lateness next to the HTTP-only ceiling measured beside each run
(the same number of processes and threads posting the same number of the same messages,
no Redis, no bot), and the duplicates and losses counted at the fake Web API.

    python -m benchmarks.reminders                  # 100,000 reminders, 4 workers, 3 rounds
    python -m benchmarks.reminders --count 20000 --faults --rounds 5

The machine is shared: a ceiling measured at another moment than the run it is compared
with gives a different answer each time. So ceilings and bot runs are interleaved, round
by round, on one fake Web API: ceiling, bot, ceiling, bot, ..., ceiling. Each bot run is
compared with the two ceilings measured right before and right after it (their mean), so
load that comes or goes during the run falls on its ceiling too. Both sides are timed
the same way, at the fake Web API: from the moment their processes are started (the
bot's workers at the reminders' due time) to the last message received. Printed: each
pair's ratio, the two ceilings it lies between, and the median and min-max of the ratios.

With --faults one worker is SIGKILLed a third of the way through and Redis (AOF on) is
restarted two thirds of the way through; a new worker replaces the killed one.
Target: at least 85% of the ceiling, 0 duplicates, 0 losses.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.adapters.slack.local_api import LocalSlackApi
from bot.app import build_services
from bot.blocks.reminders import reminder_message
from bot.config import load_settings
from bot.domain.audit import BOT
from bot.domain.comparison import OptionKind
from bot.domain.events import Noted
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Reservation
from bot.domain.reminders import Reminder, ReminderKind
from bot.domain.request import CapacityRequest
from bot.services.changes import Change
from tests.conftest import start_redis_server

ROOT = Path(__file__).resolve().parents[1]
THREADS = 8  # per worker process, as WORKER_CONCURRENCY


def _reservation(n: int, start: datetime) -> Reservation:
    return Reservation(
        kind=OptionKind.CAPACITY_BLOCK,
        id=f"cr-{n:017d}",
        region="us-east-1",
        availability_zone="us-east-1a",
        instance_type="p5.48xlarge",
        instances=1,
        start=start,
        end=start + timedelta(days=1),
        state="scheduled",
    )


def _record(n: int, start: datetime, now: datetime) -> CapacityRecord:
    request = CapacityRequest(
        count=1, instance_type="p5.48xlarge", duration_hours=24, start=start, region="us-east-1"
    )
    return CapacityRecord(
        id=f"R{n}",
        state=State.SCHEDULED,
        requester=f"U{n:09d}",
        created_at=now,
        updated_at=now,
        request=request,
        text="1x p5.48xlarge 1d",
        reservation=_reservation(n, start),
    )


def _env(redis_url: str, namespace: str, fake: LocalSlackApi) -> dict[str, str]:
    return {
        "REDIS_URL": redis_url,
        "GPU_BOT_NAMESPACE": namespace,
        "SLACK_API_URL": fake.api_url,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "GPU_BOT_AWS": "sandbox",
        "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
        "GPU_BOT_REMIND_BEFORE_START": "1h",
        "GPU_BOT_REMIND_BEFORE_EXPIRY": "2h",
        "GPU_BOT_DELIVERY_SETTLE": "2s",
    }


def seed(env: dict[str, str], count: int, due: datetime) -> None:
    """`count` requests bought for `due + 1h`: each one's 1 h reminder is due at `due`.
    Written as any change is (RequestChanges), whose table schedules the reminders."""
    services = build_services(load_settings(**env))
    now = datetime.now(UTC)
    start = due + timedelta(hours=1)

    def create(n: int) -> None:
        services.changes.create(Change(_record(n, start, now), Noted(), "bought", BOT))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(1, count + 1), chunksize=256))


def start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    full = {
        **os.environ,
        **env,
        "WORKER_LEASE_SECONDS": "10",
        "WORKER_CONCURRENCY": str(THREADS),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.worker_process"],
        cwd=ROOT,
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def ceiling(fake: LocalSlackApi, count: int, processes: int) -> float:
    """Messages per second the fake Web API takes from `processes` x THREADS posters
    sending `count` messages like the reminders with the same client: the most the bot
    could reach. Timed as the bot's runs are: from starting the processes to the last
    message received."""
    fake.reset_messages()
    args = [sys.executable, "-m", "benchmarks.reminders", "--poster", fake.api_url]
    per = count // processes
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.time()
    procs = [
        subprocess.Popen([*args, str(per), str(i)], cwd=ROOT, env=env) for i in range(processes)
    ]
    for proc in procs:
        proc.wait()
    times = fake.received_times()
    fake.reset_messages()
    return len(times) / max(max(times, default=began) - began, 1e-9)


def poster(api_url: str, count: int, index: int) -> None:
    """One ceiling process: post `count` reminder-shaped messages on THREADS threads."""
    from slack_sdk import WebClient

    client = WebClient(token="xoxb-bench", base_url=api_url)
    client.retry_handlers = []
    start = datetime.now(UTC) + timedelta(hours=1)

    def post(n: int) -> None:
        reminder = Reminder(f"C{index}-{n}", ReminderKind.BEFORE_START, start, timedelta(hours=1))
        message = reminder_message(f"C{n}", reminder, _reservation(n, start), datetime.now(UTC))
        client.chat_postMessage(
            channel=f"U{index}{n:08d}",
            text=message.text,
            blocks=message.blocks,
            metadata={"event_type": "ceiling", "event_payload": {"key": f"c{index}-{n}"}},
            unfurl_links=False,
        )

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(post, range(count), chunksize=64))


def run(fake: LocalSlackApi, count: int, workers: int, faults: bool) -> dict[str, float]:
    """One bot run: `count` reminders due at once, sent by `workers` worker processes."""
    fake.reset_messages()
    aof = ("--appendonly", "yes", "--appendfsync", "everysec")
    redis_proc, url, port, workdir = start_redis_server(*aof)
    env = _env(url, f"bench-{uuid.uuid4().hex[:8]}", fake)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        began = time.monotonic()
        due = datetime.now(UTC) + timedelta(seconds=20 + count / 1000)
        seed(env, count, due)
        seeded = time.monotonic() - began
        wait = (due - datetime.now(UTC)).total_seconds()
        if wait > 0:
            time.sleep(wait)
        t0 = due.timestamp()
        procs = [start_worker(env) for _ in range(workers)]
        killed = restarted = False
        deadline = time.monotonic() + max(600, count / 50)
        while time.monotonic() < deadline:
            got = fake.distinct_keys()
            if faults and not killed and got >= count // 3:
                procs[0].send_signal(signal.SIGKILL)
                procs.append(start_worker(env))
                killed = True
            if faults and not restarted and got >= 2 * count // 3:
                redis_proc.terminate()
                redis_proc.wait(timeout=30)
                redis_proc, *_ = start_redis_server(*aof, port=port, workdir=workdir)
                restarted = True
            if got >= count:
                break
            time.sleep(0.2)
        time.sleep(2.0)  # a late duplicate would show now
        received = fake.received_times()
        keys = Counter(fake.delivery_keys())
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        redis_proc.terminate()
        redis_proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)
    fake.reset_messages()
    times = sorted(received)
    last = times[-1] if times else t0
    lateness = [t - t0 for t in times]
    return {
        "count": count,
        "seed_s": seeded,
        "throughput": len(times) / max(last - t0, 1e-9),
        "late_p50_s": statistics.median(lateness) if lateness else float("nan"),
        "late_p99_s": lateness[int(len(lateness) * 0.99) - 1] if lateness else float("nan"),
        "duplicates": sum(n - 1 for n in keys.values() if n > 1),
        "losses": count - len(keys),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--poster":
        poster(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--faults", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="bot runs, each between two ceilings")
    args = parser.parse_args()
    fake = LocalSlackApi()
    fake.keep_calls = False
    results = []
    try:
        ceilings = [ceiling(fake, args.count, args.workers)]
        print(f"ceiling 0: {ceilings[0]:,.0f}/s", flush=True)
        for round_ in range(1, args.rounds + 1):
            result = run(fake, args.count, args.workers, args.faults)
            ceilings.append(ceiling(fake, args.count, args.workers))
            before, after = ceilings[-2:]
            result["ratio"] = result["throughput"] / statistics.mean([before, after])
            results.append(result)
            print(
                f"round {round_}: {result['count']:,} reminders, {args.workers} workers"
                f"{' (one SIGKILLed, Redis restarted)' if args.faults else ''}: "
                f"{result['throughput']:,.0f}/s between ceilings {before:,.0f}/s and "
                f"{after:,.0f}/s = {result['ratio']:.0%}; lateness p50 "
                f"{result['late_p50_s']:.1f} s, p99 {result['late_p99_s']:.1f} s; duplicates "
                f"{result['duplicates']}, losses {result['losses']} "
                f"(seeded in {result['seed_s']:.0f} s)",
                flush=True,
            )
    finally:
        fake.close()
    ratios = [r["ratio"] for r in results]
    print(
        f"median {statistics.median(ratios):.0%} of the ceilings beside each run over "
        f"{len(ratios)} rounds (min {min(ratios):.0%}, max {max(ratios):.0%}; target 85%); "
        f"ceilings {min(ceilings):,.0f} to {max(ceilings):,.0f}/s; "
        f"duplicates {sum(int(r['duplicates']) for r in results)}, "
        f"losses {sum(int(r['losses']) for r in results)}"
    )


if __name__ == "__main__":
    main()
