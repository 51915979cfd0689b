"""Ack latency and throughput of `gpu-bot serve` (HTTP mode) against a stock Bolt app,
same machine, same run, same processes and threads; and the resident memory of
`gpu-bot serve` after the load.

The baseline (benchmarks/bare_app.py) is Bolt as its documentation serves it: the stock
WSGI adapter (`slack_bolt.adapter.wsgi.SlackRequestHandler`) under plain gunicorn
gthread, `process_before_response=True`, a /gpu listener that only acks: none of
gpu-bot's server code. Both run the same shape: `--shape PROCESSESxTHREADS` (default 1x16;
the README deploys 2x8, one process per core of this machine).

Signed `/gpu` slash commands are fired over `--concurrency` keep-alive connections; each
latency is from sending the request to reading the response. Targets:

    /gpu help     p99 <= 1.2 x the stock app's p99, throughput >= 0.85 x the stock app's
    /gpu reserve  p99 <= 1.5 x the stock app's p99 (it writes the request and queues a quote)
    gpu-bot serve with one worker process < 150 MB resident after the load

The bot runs as deployed for latency: `gpu-bot serve --no-worker` acks and hands the
quote to a job, and a `gpu-bot worker` process quotes, both on the Redis at BENCH_REDIS_URL
(default redis://127.0.0.1:6379/0, in a namespace of its own, removed afterwards). In
production workers run on other machines; on this 2-core one the worker is paused while
a run is measured and drains the queued quotes between runs, so the sandbox market's CPU
does not count against the acks. Runs are interleaved over `--rounds` rounds and the
medians of the rounds are compared (the machine is shared).

With `--in-process-worker` the bot serves as `gpu-bot serve` does by default, a job worker
inside each serving process (it waits on Redis for work; the quotes it would run are still
drained between runs): what that worker costs the acks.

Each run also reads the servers' CPU time from /proc (master and workers, every thread)
and reports CPU milliseconds per request: on a shared machine latency moves with the
neighbours, the CPU a request takes much less.

Run: python -m benchmarks.ack_latency [--requests 2000] [--concurrency 8] [--shape 2x8]
     [--in-process-worker] [--rate 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests import slack_payloads as payloads
from tests.conftest import free_port
from tests.slack_fake import FakeSlack

SECRET = "benchmark-signing-secret"
HELP_P99_TARGET = 1.2
HELP_THROUGHPUT_TARGET = 0.85
RESERVE_P99_TARGET = 1.5
RSS_TARGET_MB = 150


def bot_command(port: int, workers: int, threads: int, in_process_worker: bool) -> list[str]:
    serve = ["serve", "--port", str(port), "--workers", str(workers), "--threads", str(threads)]
    if not in_process_worker:
        serve.append("--no-worker")
    return [sys.executable, "-m", "bot", *serve]


def stock_command(port: int, workers: int, threads: int, _worker: bool = False) -> list[str]:
    return [
        *(sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads)),
        *("-w", str(workers), "--bind", f"127.0.0.1:{port}", "--log-level", "warning"),
        "benchmarks.bare_app:application",
    ]


def shape(text: str) -> tuple[int, int]:
    """`2x8` -> (2 processes, 8 threads each)."""
    processes, _, threads = text.partition("x")
    if not (processes.isdigit() and threads.isdigit() and int(processes) and int(threads)):
        raise argparse.ArgumentTypeError(f"{text!r}: give PROCESSESxTHREADS, such as 2x8")
    return int(processes), int(threads)


@contextmanager
def server(
    command: Callable[..., list[str]],
    workers: int,
    threads: int,
    env: dict[str, str],
    in_process_worker: bool = False,
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    argv = command(port, workers, threads, in_process_worker)
    proc = subprocess.Popen(
        argv,
        env=os.environ | env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if _answers(port):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{argv} did not start")
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _answers(port: int) -> bool:
    """Up and answering HTTP (the stock app has no health path: any answer will do)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def drain(redis_url: str, namespace: str, timeout: float = 600) -> None:
    """Wait until the worker has no job left (quotes queued by a closed-loop run)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    prefix = "{" + namespace + "}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Due by now: the worker also schedules next month's spend summary at start.
        due_now = client.zcount(f"{prefix}:due", "-inf", time.time())
        if not due_now and not client.zcard(f"{prefix}:inflight"):
            return
        time.sleep(0.2)


def _clean(redis_url: str, namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match="{" + namespace + "}*", count=1000))
    if keys:
        client.delete(*keys)


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (gunicorn master + worker)."""
    total_kb = 0
    for p in _tree(pid):
        with open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


def _tree(pid: int) -> list[int]:
    """A process and its children (gunicorn's master and its workers)."""
    children = f"/proc/{pid}/task/{pid}/children"
    pids = [pid]
    if os.path.exists(children):
        with open(children) as f:
            pids += [int(p) for p in f.read().split()]
    return pids


def cpu_seconds(pid: int) -> float:
    """User and system CPU time used so far by a server (master and workers, all their
    threads): what a request costs the machine, whoever else is using it."""
    ticks = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def fire(
    port: int,
    text: str,
    requests: int,
    concurrency: int,
    fake: FakeSlack,
    rate: float | None = None,
) -> list[float]:
    """Latencies in seconds of `requests` signed commands over `concurrency` keep-alive
    connections: back to back (closed loop), or each sent at its slot of `rate` per
    second (open loop, as Slack traffic arrives)."""
    bodies = []
    for i in range(requests):
        body, ctype = payloads.slash_command(text, f"U0USER{i % 50}", fake.response_url(f"b{i}"))
        bodies.append((body.encode(), {"Content-Type": ctype, **payloads.sign(SECRET, body)}))
    latencies: list[float] = []
    lock = threading.Lock()
    cursor = iter(range(requests))
    start = time.perf_counter()

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        for i in cursor:
            body, headers = bodies[i]
            if rate is not None:
                time.sleep(max(0.0, start + i / rate - time.perf_counter()))
            started = time.perf_counter()
            conn.request("POST", "/slack/events", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append(time.perf_counter() - started)
            assert response.status == 200, response.status
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def pct(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def measure(
    port: int,
    pid: int,
    text: str,
    requests: int,
    concurrency: int,
    fake: FakeSlack,
    rate: float | None = None,
) -> tuple[float, float, float, float]:
    """(p50 ms, p99 ms, requests per second, server CPU ms per request) of one run."""
    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    values = fire(port, text, requests, concurrency, fake, rate)
    wall = time.perf_counter() - started
    used = (cpu_seconds(pid) - cpu) * 1000 / len(values)
    return pct(values, 50) * 1000, pct(values, 99) * 1000, len(values) / wall, used


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="per closed-loop run")
    parser.add_argument("--concurrency", type=int, default=8, help="keep-alive connections")
    parser.add_argument(
        "--shape",
        type=shape,
        default=None,
        help="PROCESSESxTHREADS of both servers (default 1x16; the README deploys 2x8)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="server processes, both apps (or --shape)"
    )
    parser.add_argument(
        "--in-process-worker",
        action="store_true",
        help="serve with a job worker in each process, as `gpu-bot serve` does by default",
    )
    parser.add_argument(
        "--rate", type=float, default=20.0, help="requests per second of the paced (open loop) runs"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians")
    args = parser.parse_args()
    workers, threads = args.shape or (args.workers, 16)
    fake = FakeSlack()
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    env = {
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_BOT_TOKEN": "xoxb-benchmark",
        "SLACK_API_URL": fake.api_url,
        "REDIS_URL": redis_url,
        "GPU_BOT_NAMESPACE": namespace,
        "GPU_BOT_APPROVERS": "U0APPROVER",
        "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
        "GPU_BOT_LOG_LEVEL": "WARNING",
    }
    reserve = "reserve 2x p5.48xlarge 3d from tomorrow"
    paced = max(args.requests // 5, 100)
    stock_label = "stock Bolt app, /gpu (ack only)"
    help_label = "gpu-bot, /gpu help"
    reserve_label = "gpu-bot, /gpu reserve (hands in a request)"
    stock_paced = f"stock Bolt app, /gpu at {args.rate:.0f}/s"
    reserve_paced = f"gpu-bot, /gpu reserve at {args.rate:.0f}/s"
    # label -> (server, command text, paced?)
    runs = {
        stock_label: ("stock", reserve, False),
        help_label: ("bot", "help", False),
        reserve_label: ("bot", reserve, False),
        stock_paced: ("stock", reserve, True),
        reserve_paced: ("bot", reserve, True),
    }
    samples: dict[str, list[tuple[float, float, float, float]]] = {label: [] for label in runs}
    print(
        f"signed /gpu commands over {args.concurrency} keep-alive connections; "
        f"{workers} server process(es) of {threads} threads each"
        f"{', a job worker in each bot process' if args.in_process_worker else ''}; "
        f"{args.rounds} interleaved "
        f"rounds of {args.requests} back to back and {paced} paced at {args.rate:.0f}/s; "
        "medians of the rounds"
    )
    worker = subprocess.Popen(
        ["nice", "-n", "10", sys.executable, "-m", "bot", "worker"],
        env=os.environ | env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with (
        server(stock_command, workers, threads, env) as (stock_port, stock_proc),
        server(bot_command, workers, threads, env, args.in_process_worker) as (
            bot_port,
            bot_proc,
        ),
    ):
        ports = {"stock": stock_port, "bot": bot_port}
        pids = {"stock": stock_proc.pid, "bot": bot_proc.pid}
        for port in ports.values():  # warm up both
            fire(port, reserve, max(args.requests // 10, 50), args.concurrency, fake)
        for _ in range(args.rounds):
            for label, (which, text, is_paced) in runs.items():
                count = paced if is_paced else args.requests
                rate = args.rate if is_paced else None
                worker.send_signal(signal.SIGSTOP)  # it runs on other machines in production
                samples[label].append(
                    measure(ports[which], pids[which], text, count, args.concurrency, fake, rate)
                )
                worker.send_signal(signal.SIGCONT)
                drain(redis_url, namespace)  # quote what this run queued, between runs
                fake.reset()
        loaded = rss_mb(bot_proc.pid)
    worker.terminate()
    worker.wait(timeout=30)
    fake.close()
    _clean(redis_url, namespace)

    med = statistics.median
    p99: dict[str, float] = {}
    rps: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for label, values in samples.items():
        p50, p99[label], rps[label], cpu[label] = (med(v[i] for v in values) for i in range(4))
        print(
            f"  {label:48} p50 {p50:6.2f} ms  p99 {p99[label]:6.2f} ms  "
            f"{rps[label]:7.0f} req/s  {cpu[label]:5.2f} ms CPU/request"
        )
    # CPU per request is the figure the machine's other users move least: the share of
    # two cores each request takes, whatever else runs.
    print(
        f"/gpu help server CPU per request: {cpu[help_label] / cpu[stock_label]:.2f}x the "
        f"stock app's; /gpu reserve: {cpu[reserve_label] / cpu[stock_label]:.2f}x (reported)"
    )
    checks = [
        ("/gpu help p99", p99[help_label] / p99[stock_label], HELP_P99_TARGET, True),
        ("/gpu help throughput", rps[help_label] / rps[stock_label], HELP_THROUGHPUT_TARGET, False),
        ("/gpu reserve p99", p99[reserve_label] / p99[stock_label], RESERVE_P99_TARGET, True),
        ("/gpu reserve p99 at a steady rate", p99[reserve_paced] / p99[stock_paced], None, True),
    ]
    ok = True
    for what, ratio, target, at_most in checks:
        if target is None:
            print(f"{what}: {ratio:.2f}x the stock app's (reported)")
            continue
        met = ratio <= target if at_most else ratio >= target
        sign = "<=" if at_most else ">="
        print(f"{what}: {ratio:.2f}x the stock app's (target {sign} {target}x): {_word(met)}")
        ok &= met
    memory = f"gpu-bot serve after the load: {loaded:.0f} MB resident (gunicorn master + "
    if workers == 1:
        met = loaded < RSS_TARGET_MB
        print(memory + f"1 worker; target < {RSS_TARGET_MB} MB): {_word(met)}")
        ok &= met
    else:
        print(memory + f"{workers} workers; the target is for 1 worker)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _word(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    sys.exit(main())
