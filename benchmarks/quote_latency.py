"""How long one quote takes when every AWS call is slow.

Every call the quote makes (Pricing for EC2 and SageMaker, Spot history, Capacity Block
and training plan offerings) gets the same injected latency in the sandbox market. In the
same run this measures each call alone, their sum (what a sequential quote would take),
the slowest single call, and the real quote. The calls overlap, so the target is:

    quote time <= 1.3 x the slowest single call

Run: python -m benchmarks.quote_latency [--latency-ms 300] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from aws_sandbox import SandboxMarket
from bot.adapters.aws.market import AwsMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import default_catalog
from bot.domain.grammar import parse_request
from bot.domain.recommendation import build_quote

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
TARGET = 1.3


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    clock = ManualClock(NOW)
    sandbox = SandboxMarket(clock=clock)
    sandbox.conditions.latency_ms = args.latency_ms
    catalog = default_catalog()
    request = parse_request("2x p5.48xlarge 3d from 2026-12-14", now=NOW).complete("us-east-1")
    clients = sandbox_clients(sandbox, request.region)
    market = AwsMarket(lambda _region: clients, catalog)  # no cache: every call is made

    calls = market.calls(request, NOW)  # the lookups a quote makes, one by one
    timed(lambda: build_quote(request, market.snapshot(request, NOW), catalog, NOW))  # warm up

    singles: dict[str, list[float]] = {name: [] for name in calls}
    sums, slowest, quotes = [], [], []
    for _ in range(args.runs):
        run = {name: timed(call) for name, call in calls.items()}
        for name, seconds in run.items():
            singles[name].append(seconds)
        sums.append(sum(run.values()))
        slowest.append(max(run.values()))
        quotes.append(
            timed(lambda: build_quote(request, market.snapshot(request, NOW), catalog, NOW))
        )
    market.close()

    med = statistics.median
    print(f"injected latency per AWS call: {args.latency_ms} ms, {args.runs} runs, medians")
    for name, values in singles.items():
        print(f"  {name:40} {med(values) * 1000:8.1f} ms")
    print(f"  {'sum of the calls (a sequential quote)':40} {med(sums) * 1000:8.1f} ms")
    print(f"  {'slowest single call':40} {med(slowest) * 1000:8.1f} ms")
    print(f"  {'quote (calls overlap)':40} {med(quotes) * 1000:8.1f} ms")
    vs_slowest = med(quotes) / med(slowest)
    vs_sum = med(quotes) / med(sums)
    print(f"quote / slowest call = {vs_slowest:.2f}x (target <= {TARGET}x)")
    print(f"quote / sum of calls = {vs_sum:.2f}x")
    ok = vs_slowest <= TARGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
