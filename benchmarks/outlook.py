"""The capacity outlook at a busy platform's rate: a year of 20,000 searches a day over 50
shapes in Redis, what remembering adds to a quote, and how long an outlook answer takes.

    python -m benchmarks.outlook                  # 365 days, 20,000 searches/day, 50 shapes
    python -m benchmarks.outlook --days 90 --pairs 41

In a throwaway redis-server:

1. Memory. Each shape's day is the hash a day of its searches leaves: 400 searches a day
   per shape (20,000 / 50), each asking about a start from 0 to 8 weeks ahead in one of
   three regions and finding what a seeded market offers then (offerings come and go, AWS
   changes a price now and then), counted by the bot's own `increments`. A year of them
   is written (one HSET per shape-day), then MEMORY USAGE of every hash and INFO's
   used_memory before and after.
2. The cost added to a quote. The real QuoteService on the sandbox market (in process, no
   network: the fastest a quote gets, so the largest ratio), paired rounds: the same quote
   without recording, then with (its searches recorded in one pipelined round trip after
   it, and the outlook's hint read for it, as the quote job does), alternating which goes
   first; the median of the per-pair ratios. Measured twice: the comparison alone, and as
   the quote job makes it, the answer shown in Slack (the local Web API over HTTP) before
   the searches are recorded.
3. An outlook answer: `/gpu outlook` for one shape in every region over the whole year
   (two kinds x 365 days of hashes read in one round trip, then summed).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from datetime import UTC, date, datetime, timedelta

import redis

from aws_sandbox import SandboxMarket
from bot.adapters.aws.market import AwsMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.adapters.slack.client import make_web_client
from bot.adapters.slack.local_api import LocalSlackApi
from bot.adapters.slack.notifier import SlackNotifier
from bot.adapters.store import RedisStore
from bot.domain.catalog import default_catalog
from bot.domain.market import Offering, Origin, PriceSource, ReservationKind
from bot.domain.outlook import Search, Shape, increments, merged
from bot.domain.outlook_query import parse_outlook
from bot.domain.request import CapacityRequest
from bot.services.outlook import OutlookService
from bot.services.quoting import QuoteService
from tests.conftest import start_redis_server

NOW = datetime(2027, 11, 30, 9, 0, tzinfo=UTC)
REGIONS = ("us-east-1", "us-west-2", "eu-north-1")
TYPES = ("p5.48xlarge", "p5e.48xlarge", "p4d.24xlarge", "p4de.24xlarge", "trn1.32xlarge")
COUNTS = (1, 2, 4, 8, 16)
SOURCE = PriceSource(origin=Origin.SANDBOX, detail="benchmark", as_of=NOW)
QUOTE_TARGET = 1.05
USER = "U0BENCH"
ANSWER_TARGET_MS = 200.0


def shapes(n: int) -> list[Shape]:
    """n shapes: blocks and plans of the usual GPU types, counts and 1-14 day durations."""
    rng = random.Random(5)
    out: set[Shape] = set()
    while len(out) < n:
        kind = rng.choice(list(ReservationKind))
        out.add(Shape(kind, rng.choice(TYPES), rng.choice(COUNTS), 24 * rng.randint(1, 14)))
    return sorted(out, key=lambda s: s.key)


def _day_hash(shape: Shape, day: date, searches: int, rng: random.Random) -> dict[str, int]:
    """The counters of one shape-day: `searches` searches over a seeded market."""
    base = datetime(day.year, day.month, day.day, tzinfo=UTC)
    price = 34.61 if day.month % 3 else 31.46  # AWS changes its price now and then
    offered = [  # what is on the market that day: (region, zone, start lead in days)
        (r, f"{r}{z}", lead)
        for r in REGIONS
        for z in "ab"
        for lead in range(1, 57)
        if rng.random() < 0.08
    ]
    counts = []
    for _ in range(searches):
        at = base + timedelta(minutes=rng.randrange(24 * 60))
        region = rng.choice(REGIONS)
        asked = at + timedelta(days=rng.randrange(0, 50))
        found = tuple(
            Offering(
                kind=shape.kind,
                offering_id="x",
                instance_type=shape.instance_type,
                count=shape.count,
                start=base + timedelta(days=lead, hours=11, minutes=30),
                end=base + timedelta(days=lead, hours=11 + shape.hours, minutes=30),
                duration_hours=shape.hours,
                upfront_usd=price * shape.count * shape.hours,
                zone=zone,
                source=SOURCE,
            )
            for r, zone, lead in offered
            if r == region and base + timedelta(days=lead) >= asked - timedelta(days=1)
        )[:6]  # a search's answer: a few offerings around the start asked
        counts.append(increments(Search(shape, region, at, asked, found)))
    return merged(counts)


def memory(store: RedisStore, all_shapes: list[Shape], days: int, per_day: int) -> None:
    client = store.redis
    before = int(client.info("memory")["used_memory"])
    rng = random.Random(7)
    per_shape = per_day // len(all_shapes)
    template = {s: [_day_hash(s, NOW.date(), per_shape, rng) for _ in range(3)] for s in all_shapes}
    started = time.perf_counter()
    fields = 0
    for n in range(days):
        day = NOW.date() - timedelta(days=n)
        pipe = client.pipeline(transaction=False)
        for shape in all_shapes:
            counters = rng.choice(template[shape])  # one of three simulated days, per shape
            fields += len(counters)
            pipe.hset(store._outlook_key(shape, day), mapping=counters)
        pipe.execute()
    wrote = time.perf_counter() - started
    after = int(client.info("memory")["used_memory"])
    sizes = [
        store.outlook_bytes(s, NOW.date() - timedelta(days=n))
        for s in all_shapes
        for n in range(0, days, max(days // 30, 1))
    ]
    keys = len(all_shapes) * days
    print(
        f"memory: {len(all_shapes)} shapes x {days} days = {keys:,} hashes, "
        f"{fields / keys:.0f} fields each on average (written in {wrote:.1f} s)"
    )
    print(
        f"  MEMORY USAGE per shape-day: median {statistics.median(sizes):,.0f} B, "
        f"max {max(sizes):,} B"
    )
    print(
        f"  used_memory grew {(after - before) / 2**20:,.1f} MiB "
        f"({(after - before) / keys:,.0f} B per shape-day)"
    )


def quote_cost(store: RedisStore, pairs: int, show: SlackNotifier | None) -> None:
    shown = "shown in Slack, as the quote job does" if show else "the comparison alone"
    print(f"the cost added to a quote ({shown}):")
    clock = ManualClock(NOW)
    catalog = default_catalog()
    sandbox = SandboxMarket(clock=clock)
    clients = {r: sandbox_clients(sandbox, r) for r in sandbox_regions()}
    market = AwsMarket(
        lambda region: clients.setdefault(region, sandbox_clients(sandbox, region)), catalog
    )
    outlook = OutlookService(store, catalog, clock, 365, "us-east-1", market.regions())
    plain = QuoteService(market, catalog, clock, "us-east-1")
    remembering = QuoteService(market, catalog, clock, "us-east-1", record=outlook.record)
    for text in (
        "16x p5.48xlarge 3d from 2027-12-14 us-east-1",
        "16x p5.48xlarge 3d from 2027-12-14 region=any",
    ):
        request = plain.complete(plain.parse(text))
        answered: list[float] = []  # until the answer is ready, in each run with recording

        def without(request: CapacityRequest = request) -> float:
            started = time.perf_counter()
            quote = plain.quote(request)
            if show:
                show.show_quote(USER, None, quote)
            return time.perf_counter() - started

        def with_recording(
            request: CapacityRequest = request, answered: list[float] = answered
        ) -> tuple[float, int]:
            started = time.perf_counter()
            seen: list[Search] = []
            quote = remembering.quote(request, seen)
            note = outlook.note_for(quote)  # the hint's read, before the answer is shown
            if show:
                show.show_quote(USER, None, quote.model_copy(update={"outlook_note": note}))
            answered.append(time.perf_counter() - started)
            outlook.record(seen)  # after it is shown, in the same job
            return time.perf_counter() - started, len(seen)

        for _ in range(3):  # warm up: clients, the sold-in cache, the price cache
            without()
            with_recording()
        ratios, base, withs = [], [], []
        searches = 0
        for i in range(pairs):
            if i % 2:
                a = without()
                b, searches = with_recording()
            else:
                b, searches = with_recording()
                a = without()
            ratios.append(b / a)
            base.append(a)
            withs.append(b)
        answered = answered[-pairs:]
        to_answer = statistics.median(w / b for w, b in zip(answered, base, strict=True))
        ratio = statistics.median(ratios)
        verdict = "ok" if ratio <= QUOTE_TARGET else "OVER the 5% target"
        print(
            f"  `{text}` ({searches} searches recorded): "
            f"without {statistics.median(base) * 1000:.1f} ms, "
            f"with {statistics.median(withs) * 1000:.1f} ms; median ratio over {pairs} pairs "
            f"{ratio:.3f} ({verdict}); until the answer is ready: {to_answer:.3f}"
        )


def sandbox_regions() -> tuple[str, ...]:
    return ("us-east-1",)


def answer_time(store: RedisStore, days: int, runs: int) -> None:
    clock = ManualClock(NOW)
    catalog = default_catalog()
    outlook = OutlookService(store, catalog, clock, 365, "us-east-1", ("us-east-1",))
    query = parse_outlook(
        f"16x p5.48xlarge 3d region=any days={days}", now=NOW, catalog=catalog, max_days=365
    )
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        found = outlook.answer(query)
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    worst = max(times)
    verdict = "ok" if worst <= ANSWER_TARGET_MS else f"OVER {ANSWER_TARGET_MS:.0f} ms"
    print(
        f"outlook answer over {days} days ({found.searches:,} searches on "
        f"{found.days_searched} days, both kinds, every region): median {median:.1f} ms, "
        f"slowest of {runs} {worst:.1f} ms ({verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--searches", type=int, default=20_000, help="a day, over all shapes")
    parser.add_argument("--shapes", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=101)
    args = parser.parse_args()
    proc, url, _port, _dir = start_redis_server()
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        store = RedisStore(client, namespace=f"bench-{uuid.uuid4().hex[:6]}")
        all_shapes = shapes(args.shapes)
        if Shape(ReservationKind.CAPACITY_BLOCK, "p5.48xlarge", 16, 72) not in all_shapes:
            all_shapes[0] = Shape(ReservationKind.CAPACITY_BLOCK, "p5.48xlarge", 16, 72)
        memory(store, all_shapes, args.days, args.searches)
        answer_time(store, args.days, 21)
        quote_cost(store, args.pairs, None)
        slack = LocalSlackApi()
        slack.keep_calls = False
        try:
            quote_cost(
                store, args.pairs, SlackNotifier(make_web_client("xoxb-bench", slack.api_url))
            )
        finally:
            slack.close()
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
