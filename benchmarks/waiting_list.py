"""The approvers' waiting list as it grows: a page of ten and its count for one approver
at 100 and at 10,000 waiting entries, read with the per-user exclusion counts that every
write keeps, next to the same answer by walking the whole list (what is read before the
counts are built) measured in the same run.

    python -m benchmarks.waiting_list                    # 100 and 10,000 entries
    python -m benchmarks.waiting_list --sizes 100,1000,50000 --reps 101

The entries are real pending requests of 300 requesters written by the store's
compare-and-set (transition.lua) in a throwaway redis-server. Target: the page read with
the counts flat in the list's length (at most 2x from the smallest size to the largest).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import redis

from bot.adapters.store import RedisStore
from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from tests.conftest import start_redis_server
from tests.factories import NOW, make_record

APPROVER = "U7"  # one of the requesters: their own requests are left out of their page
TARGET = 2.0


def filled(client: redis.Redis, n: int) -> RedisStore:
    store = RedisStore(client, namespace=f"bench-{uuid.uuid4().hex[:6]}")
    store.count_waiting_exclusions()  # an empty list: counted from the start
    base = make_record("R1", state=State.PENDING_APPROVAL)
    for i in range(1, n + 1):
        record = base.model_copy(update={"id": f"R{i}", "requester": f"U{i % 300}"})
        entry = AuditEntry(record.id, "bench", "x", "draft", "pending_approval", NOW)
        store.create(record, entry)
    return store


def median_ms(store: RedisStore, counted: bool, reps: int) -> float:
    marker = store.key("waiting", "counted")
    if counted:
        store.redis.set(marker, "1")
    else:
        store.redis.delete(marker)
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        store.waiting_for(APPROVER, 0, 10)
        times.append((time.perf_counter() - started) * 1000)
    store.redis.set(marker, "1")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--reps", type=int, default=51)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    proc, url, _port, _dir = start_redis_server()
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        stores = {n: filled(client, n) for n in sizes}
        rows = {
            "with the exclusion counts": {
                n: median_ms(s, True, args.reps) for n, s in stores.items()
            },
            "walking the whole list": {
                n: median_ms(s, False, args.reps) for n, s in stores.items()
            },
        }
    finally:
        proc.terminate()
        proc.wait()
    first, last = sizes[0], sizes[-1]
    head = " | ".join(f"{n:,} waiting (median ms)" for n in sizes)
    print(f"| read | {head} | x ({last:,} / {first:,}) |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name, by_size in rows.items():
        cells = " | ".join(f"{by_size[n]:.2f}" for n in sizes)
        print(f"| {name} | {cells} | {by_size[last] / by_size[first]:.2f}x |")
    growth = rows["with the exclusion counts"][last] / rows["with the exclusion counts"][first]
    verdict = "met" if growth <= TARGET else "MISSED"
    walk = rows["walking the whole list"][last] / rows["with the exclusion counts"][last]
    print(f"\nGrowth with the counts: {growth:.2f}x (target <= {TARGET}x: {verdict});")
    print(f"at {last:,} entries the whole walk takes {walk:.0f}x as long.")


if __name__ == "__main__":
    main()
