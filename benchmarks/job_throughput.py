"""Job throughput: N jobs due at once, each posting one chat.postMessage to a local fake
Web API, run by `gpu-bot` job workers (1 and 4 processes on one Redis), against two
baselines measured in the same run:

- the HTTP-only ceiling: the same posts, from the same number of processes with the same
  threads each, with the bot's Slack client, and no queue at all;
- rq with SimpleWorker (an established Redis job queue) on the same posts, with the same
  Slack client, at the same concurrency: an rq worker runs one job at a time, so rq gets
  one worker process for each of the bot's threads (4 processes x 8 threads against 32
  rq worker processes: 32 jobs in flight on each side), as `rq worker-pool -n 32` would.

Every run starts from the same point: all jobs already stored and due, the processes up
and waiting; the clock starts (T0) when they are released. Printed per run: posts per
second (N over the time from T0 to the last post), lateness p50/p99 (post arrival - T0),
duplicates (a job's text posted more than once) and losses (never posted).
Target: 4 gpu-bot workers reach at least 85% of the 4-process ceiling, with 0
duplicates and 0 losses.

The machine is shared, so each process count runs `--rounds` rounds of the ceiling, the
workers and (at the largest count) rq, back to back, the order rotated each round so that
none is always first; each run is compared with its own round's ceiling, and the verdict
gives the median and the min-max of the rounds' ratios (gpu-bot / ceiling, rq / ceiling,
gpu-bot / rq). The client processes' CPU time per post is printed too: on a machine with
no spare core it, not the wall clock, bounds throughput, and it does not move with the load.

The fake Web API (benchmarks/fake_web_api.py) sets TCP_NODELAY and writes each response
in one send. Redis is a throwaway redis-server without persistence (or BENCH_REDIS_URL).

Run: python -m benchmarks.job_throughput [--jobs 100000] [--processes 1,4]
     [--concurrency 8] [--rounds 3] [--rq-jobs N] [--no-rq]
rq is a benchmark-only dependency: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from typing import Any

from pydantic import BaseModel

from bot.services.jobs import JobKind
from tests.conftest import free_port, start_redis_server

CHANNEL = "C0BENCH"
TARGET = 0.85
CEILING, WORKERS, RQ = "HTTP only (ceiling)", "gpu-bot worker", "rq SimpleWorker"
STALL_SECONDS = 20.0  # no new post for this long: the run is over, the rest are lost
_ctx = multiprocessing.get_context("spawn")


class BenchPost(BaseModel):
    n: int


BENCH_POST = JobKind("bench-post", BenchPost)


def _client(api_url: str) -> Any:
    from bot.adapters.slack.client import make_web_client

    return make_web_client("xoxb-bench", api_url)


def _post(client: Any, n: int) -> None:
    client.chat_postMessage(channel=CHANNEL, text=f"job {n}")


# --- the processes ------------------------------------------------------------------


def ceiling_process(
    api_url: str, ids: range, concurrency: int, ready: Event, start: Event, cpu: Any
) -> None:
    client = _client(api_url)
    ready.set()
    start.wait()
    began = time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        for _ in pool.map(lambda n: _post(client, n), ids):
            pass
    cpu.value = time.process_time() - began


def worker_process(
    redis_url: str,
    namespace: str,
    api_url: str,
    concurrency: int,
    batch: int,
    ready: Event,
    start: Event,
    stop: Event,
    cpu: Any,
) -> None:
    os.environ.update(
        {
            "REDIS_URL": redis_url,
            "GPU_BOT_NAMESPACE": namespace,
            "SLACK_API_URL": api_url,
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "LOG_LEVEL": "WARNING",
        }
    )
    from bot.app import build_services
    from bot.config import load_settings
    from bot.worker import Worker

    wiring = build_services(load_settings())
    slack = wiring.slack
    wiring.jobs.register(BENCH_POST, lambda job: _post(slack, job.n))
    worker = Worker(wiring, concurrency=concurrency, batch=batch)
    ready.set()
    start.wait()
    began = time.process_time()
    worker.run_forever(stop)  # type: ignore[arg-type]  # has is_set() and wait()
    cpu.value = time.process_time() - began


_rq_client: Any = None


def rq_post(n: int) -> None:
    """The rq job: the same post, with the same client (one per worker process)."""
    global _rq_client
    if _rq_client is None:
        _rq_client = _client(os.environ["BENCH_API_URL"])
    _post(_rq_client, n)


def rq_process(
    redis_url: str, queue: str, api_url: str, ready: Event, start: Event, cpu: Any
) -> None:
    import logging

    import redis
    from rq import Queue, SimpleWorker

    os.environ["BENCH_API_URL"] = api_url
    logging.getLogger("rq.worker").setLevel(logging.WARNING)
    connection = redis.Redis.from_url(redis_url)
    worker = SimpleWorker([Queue(queue, connection=connection)], connection=connection)
    rq_post(-1)  # make the client before the clock starts, as the others do
    ready.set()
    start.wait()
    began = time.process_time()
    worker.work(burst=True, logging_level="WARNING")
    cpu.value = time.process_time() - began


# --- measuring ----------------------------------------------------------------------


def _cpu_counters(procs: int) -> list[Any]:
    """One shared float per process: its CPU seconds from T0 to its end."""
    return [_ctx.Value("d", 0.0) for _ in range(procs)]


@dataclass
class Result:
    name: str
    processes: int
    jobs: int
    seconds: float
    lateness: list[float]
    duplicates: int
    losses: int
    note: str = ""
    cpu_seconds: float = 0.0  # the client processes' CPU time (filled in after they end)
    ceiling: Result | None = None  # the HTTP-only run it is compared with (its round's)
    round: int = 0

    @property
    def cpu_ms_per_job(self) -> float:
        return 1000 * self.cpu_seconds / self.jobs if self.jobs else float("nan")

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0


class FakeApi:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.api_url = f"{self.base}/api/"

    def _call(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(self.base + path, method=method, data=None)
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    def count(self) -> int:
        return int(self._call("/__count")["count"])

    def dump(self) -> list[tuple[float, str]]:
        return [(float(t), str(text)) for t, text in self._call("/__dump")]

    def reset(self) -> None:
        self._call("/__reset", method="POST")


@contextmanager
def fake_api() -> Iterator[FakeApi]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.fake_web_api", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = FakeApi(port)
    try:
        for _ in range(200):
            try:
                api.count()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("the fake Web API did not start")
        yield api
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def redis_server() -> Iterator[str]:
    url = os.environ.get("BENCH_REDIS_URL")
    if url:
        yield url
        return
    if not shutil.which("redis-server"):
        raise SystemExit("needs redis-server on PATH, or BENCH_REDIS_URL")
    proc, url, _port, workdir = start_redis_server("--save", "", "--appendonly", "no")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def measure(
    name: str,
    api: FakeApi,
    jobs: int,
    processes: list[Any],
    readies: list[Event],
    start: Event,
    note: str = "",
) -> Result:
    """Start the processes, wait until each is ready, release them (T0) and wait for
    the posts; then read what the fake Web API received."""
    api.reset()
    for proc in processes:
        proc.start()
    for ready in readies:
        if not ready.wait(120):
            raise RuntimeError(f"{name}: a process did not get ready")
    t0 = time.time()
    start.set()
    seen, last_change = 0, time.monotonic()
    while seen < jobs and time.monotonic() - last_change < STALL_SECONDS:
        time.sleep(0.2)
        count = api.count()
        if count != seen:
            seen, last_change = count, time.monotonic()
    posts = [(t, text) for t, text in api.dump() if text != "job -1"]
    first: dict[str, float] = {}
    for t, text in posts:
        first.setdefault(text, t)
    counts = Counter(text for _, text in posts)
    expected = {f"job {n}" for n in range(jobs)}
    lateness = sorted(t - t0 for t in first.values())
    end = max(first.values()) if first else t0
    return Result(
        name=name,
        processes=len(processes),
        jobs=len(first),
        seconds=end - t0,
        lateness=lateness,
        duplicates=sum(c - 1 for c in counts.values() if c > 1),
        losses=len(expected - first.keys()),
        note=note,
    )


def run_ceiling(api: FakeApi, jobs: int, procs: int, concurrency: int) -> Result:
    start = _ctx.Event()
    readies = [_ctx.Event() for _ in range(procs)]
    cpus = _cpu_counters(procs)
    processes = [
        _ctx.Process(
            target=ceiling_process,
            args=(api.api_url, range(i, jobs, procs), concurrency, readies[i], start, cpus[i]),
        )
        for i in range(procs)
    ]
    result = measure(CEILING, api, jobs, processes, readies, start)
    for proc in processes:
        proc.join(60)
    result.cpu_seconds = sum(c.value for c in cpus)
    return result


def run_workers(
    api: FakeApi, redis_url: str, jobs: int, procs: int, concurrency: int, batch: int
) -> Result:
    from bot.adapters.store import RedisStore
    from bot.adapters.store.connect import open_redis

    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    store = RedisStore(open_redis(redis_url), namespace=namespace)
    due = datetime.now(UTC)
    store.schedule_many(BENCH_POST.job(str(n), due, BenchPost(n=n)) for n in range(jobs))
    start, stop = _ctx.Event(), _ctx.Event()
    readies = [_ctx.Event() for _ in range(procs)]
    cpus = _cpu_counters(procs)
    processes = [
        _ctx.Process(
            target=worker_process,
            args=(
                redis_url,
                namespace,
                api.api_url,
                concurrency,
                batch,
                readies[i],
                start,
                stop,
                cpus[i],
            ),
        )
        for i in range(procs)
    ]
    try:
        result = measure(WORKERS, api, jobs, processes, readies, start)
    finally:
        stop.set()
        for proc in processes:
            proc.join(60)
    result.cpu_seconds = sum(c.value for c in cpus)
    r = store.redis
    left = {
        # Due by now: a worker also schedules next month's spend summary at start.
        "due": r.zcount(store.key("due"), "-inf", time.time()),
        "in flight": r.zcard(store.key("inflight")),
        "dead": r.hlen(store.key("dead")),
        "stored": r.hlen(store.key("jobs")),
    }
    result.note = ", ".join(f"{k} {v}" for k, v in left.items() if v) or "queue empty after"
    for key in r.scan_iter(match=store.key("*")):
        r.delete(key)
    return result


def run_rq(api: FakeApi, redis_url: str, jobs: int, procs: int) -> Result:
    import redis
    from rq import Queue

    queue_name = f"bench-{uuid.uuid4().hex[:8]}"
    connection = redis.Redis.from_url(redis_url)
    queue = Queue(queue_name, connection=connection)
    keys: list[str] = []
    for first in range(0, jobs, 1000):
        with connection.pipeline() as pipe:
            datas = [
                Queue.prepare_data(rq_post, (n,)) for n in range(first, min(first + 1000, jobs))
            ]
            keys += [job.key for job in queue.enqueue_many(datas, pipeline=pipe)]
            pipe.execute()
    start = _ctx.Event()
    readies = [_ctx.Event() for _ in range(procs)]
    cpus = _cpu_counters(procs)
    processes = [
        _ctx.Process(
            target=rq_process,
            args=(redis_url, queue_name, api.api_url, readies[i], start, cpus[i]),
        )
        for i in range(procs)
    ]
    try:
        result = measure(RQ, api, jobs, processes, readies, start)
    finally:
        for proc in processes:
            proc.join(60)
    result.cpu_seconds = sum(c.value for c in cpus)
    for first in range(0, len(keys), 1000):  # rq's keys for these jobs and this queue
        connection.delete(*keys[first : first + 1000])
    for key in connection.scan_iter(match=f"*{queue_name}*"):
        connection.delete(key)
    return result


# --- reporting ----------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def report(results: list[Result]) -> None:
    head = f"{'run':<22}{'procs':>5}{'jobs':>8}{'posts/s':>9}{'p50 late':>10}"
    head += f"{'p99 late':>10}{'dup':>5}{'lost':>6}{'/ceiling':>10}{'cpu ms/job':>12}  notes"
    print(head)
    for r in results:
        ratio = f"{r.rate / r.ceiling.rate:.2f}x" if r.ceiling and r.ceiling.rate else "-"
        print(
            f"{r.name:<22}{r.processes:>5}{r.jobs:>8}{r.rate:>9.0f}"
            f"{_pct(r.lateness, 0.5):>9.2f}s{_pct(r.lateness, 0.99):>9.2f}s"
            f"{r.duplicates:>5}{r.losses:>6}{ratio:>10}{r.cpu_ms_per_job:>12.3f}  {r.note}"
        )


def _rq_installed() -> bool:
    try:
        import rq  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs per run (100000)")
    parser.add_argument("--processes", default="1,4", help="process counts to run (1,4)")
    parser.add_argument("--concurrency", type=int, default=8, help="threads per process (8)")
    parser.add_argument("--batch", type=int, default=64, help="worker claim batch (64)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    parser.add_argument("--rq-jobs", type=int, default=None, help="jobs for rq (--jobs)")
    parser.add_argument("--no-rq", action="store_true", help="skip the rq baseline")
    args = parser.parse_args(argv)
    if not args.no_rq and not _rq_installed():
        # Said before anything runs: the rq baseline comes minutes into the run.
        print(
            "job_throughput: rq is not installed (the rq SimpleWorker baseline needs it): "
            "pip install -e '.[bench]', or run with --no-rq",
            file=sys.stderr,
        )
        return 2
    counts = [int(p) for p in args.processes.split(",")]
    rq_jobs = args.rq_jobs or args.jobs
    results: list[Result] = []
    with redis_server() as redis_url, fake_api() as api:
        print(
            f"{args.jobs} jobs due at once; {args.concurrency} threads per process; "
            f"{args.rounds} rounds; fake Web API {api.base}; Redis {redis_url}",
            flush=True,
        )
        for procs in counts:
            with_rq = not args.no_rq and procs == max(counts)
            for round_ in range(args.rounds):
                # Each round measures the ceiling, the workers and rq back to back, the
                # order rotated each round, so that load from elsewhere on the machine
                # falls on all alike; each is compared with its round's ceiling.
                kinds = [CEILING, WORKERS, *([RQ] if with_rq else [])]
                shift = round_ % len(kinds)
                runs: list[Result] = []
                for kind in kinds[shift:] + kinds[:shift]:
                    if kind == CEILING:
                        runs.append(run_ceiling(api, args.jobs, procs, args.concurrency))
                    elif kind == WORKERS:
                        runs.append(
                            run_workers(
                                api, redis_url, args.jobs, procs, args.concurrency, args.batch
                            )
                        )
                    else:
                        runs.append(run_rq(api, redis_url, rq_jobs, procs * args.concurrency))
                    runs[-1].round = round_ + 1
                    _progress(runs[-1])
                ceiling = next(r for r in runs if r.name == CEILING)
                for r in runs:
                    r.ceiling = ceiling
                results += runs
    print()
    report(results)
    _verdict(results, max(counts), args.concurrency)
    return 0


def _progress(r: Result) -> None:
    print(f"  {r.name} x{r.processes}: {r.rate:.0f} posts/s", file=sys.stderr, flush=True)


def _ratios(results: list[Result], name: str, procs: int) -> dict[int, float]:
    """Round -> the rate of `name`'s run over its round's ceiling."""
    return {
        r.round: r.rate / r.ceiling.rate
        for r in results
        if r.name == name and r.processes == procs and r.ceiling and r.ceiling.rate
    }


def _spread(ratios: list[float]) -> str:
    return (
        f"median {statistics.median(ratios):.2f}x, min {min(ratios):.2f}x, max "
        f"{max(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)})"
    )


def _verdict(results: list[Result], procs: int, concurrency: int) -> None:
    ours = [r for r in results if r.name == WORKERS and r.processes == procs and r.ceiling]
    if not ours:
        return
    by_round = _ratios(results, WORKERS, procs)
    ratios = list(by_round.values())
    cpu = [r.ceiling.cpu_ms_per_job / r.cpu_ms_per_job for r in ours if r.ceiling and r.jobs]
    duplicates = sum(r.duplicates for r in ours)
    losses = sum(r.losses for r in ours)
    ratio = statistics.median(ratios)
    met = ratio >= TARGET and duplicates == 0 and losses == 0
    print(
        f"\ngpu-bot x{procs} / the HTTP-only ceiling over {len(ratios)} rounds: "
        f"{_spread(ratios)}; target >= {TARGET}x; {duplicates} duplicates, {losses} losses: "
        f"{'met' if met else 'MISSED'}"
    )
    print(
        f"client CPU per post, ceiling / gpu-bot: median {statistics.median(cpu):.2f}x "
        "(what the queue costs on a machine with no spare core)"
    )
    rq_rounds = _ratios(results, RQ, procs * concurrency)
    if rq_rounds:
        spread = _spread(list(rq_rounds.values()))
        print(f"rq SimpleWorker x{procs * concurrency} / the ceiling: {spread}")
        beside = [by_round[n] / rq_rounds[n] for n in sorted(rq_rounds) if n in by_round]
        print(
            f"gpu-bot x{procs} ({concurrency} threads each) / rq x{procs * concurrency} "
            f"(same {procs * concurrency} jobs in flight), round by round: {_spread(beside)}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
