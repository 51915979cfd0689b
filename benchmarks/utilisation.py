"""10,000 live reservations sampled in one round: AWS calls batched within the describe
limits next to a naive one-call-per-reservation baseline measured in the same run, the
median round time, and the memory the samples take per request (bounded).

    python -m benchmarks.utilisation                     # 10,000 requests, 5 rounds
    python -m benchmarks.utilisation --count 2000 --rounds 3

The requests are real records in a throwaway Redis, sampled by the real UsageService and
AWS adapter (bot/adapters/aws/usage.py). AWS is a counting stand-in that answers from a
table of running counts and refuses what AWS refuses: more than 1,000 capacity reservation
ids or MaxResults above 1,000 (DescribeCapacityReservations), MaxResults above 100
(ListTrainingPlans), more than 200 values in one filter (DescribeInstances). Between rounds
a tenth of the counts change, as instances start and stop.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from bot.adapters.aws.usage import AwsUsage
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.domain.audit import BOT, AuditEntry
from bot.domain.catalog import default_catalog
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Reservation
from bot.domain.request import CapacityRequest
from bot.services.changes import RequestChanges
from bot.services.delivery import OnceOnly
from bot.services.jobs import RetryLater
from bot.services.ports import Measure, Target
from bot.services.reactions import Reactions
from bot.services.usage import SAMPLES_KEPT, UsageService, target_of
from tests.conftest import start_redis_server

REGIONS = ("us-east-1", "us-west-2")
LIVE_CALL_S = 0.1  # an assumed AWS round trip, for the estimate only
ROUND_MIN = 5
START = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)


class Refused(Exception):
    """What AWS would answer with a ValidationException."""


@dataclass
class World:
    """Running counts by reservation id, plan ARN and request id; every call counted."""

    running: dict[str, int] = field(default_factory=dict)
    reservations: dict[str, tuple[str, int]] = field(default_factory=dict)  # id -> region, total
    plans: dict[str, tuple[str, int]] = field(default_factory=dict)
    windows: dict[str, str] = field(default_factory=dict)  # request id -> region
    calls: Counter[str] = field(default_factory=Counter)


class _Ec2:
    def __init__(self, world: World, region: str) -> None:
        self.world, self.region = world, region

    def describe_capacity_reservations(self, **params: Any) -> dict[str, Any]:
        self.world.calls["ec2:DescribeCapacityReservations"] += 1
        ids = params.get("CapacityReservationIds", [])
        if len(ids) > 1000 or int(params.get("MaxResults", 1000)) > 1000:
            raise Refused("DescribeCapacityReservations: at most 1000")
        rows = []
        for rid in ids:
            _region, total = self.world.reservations[rid]
            used = self.world.running[rid]
            rows.append(
                {
                    "CapacityReservationId": rid,
                    "TotalInstanceCount": total,
                    "AvailableInstanceCount": total - used,
                    "State": "active",
                }
            )
        return {"CapacityReservations": rows}

    def describe_instances(self, **params: Any) -> dict[str, Any]:
        self.world.calls["ec2:DescribeInstances"] += 1
        if any(len(f["Values"]) > 200 for f in params.get("Filters", [])):
            raise Refused("DescribeInstances: at most 200 values per filter")
        tag = next(f for f in params["Filters"] if f["Name"].startswith("tag:"))
        instances = [
            {"InstanceId": f"i-{rid}-{n}", "Tags": [{"Key": "gpu-bot:request-id", "Value": rid}]}
            for rid in tag["Values"]
            for n in range(self.world.running.get(rid, 0))
        ]
        page = int(params.get("MaxResults", 1000))
        start = int(params.get("NextToken", 0))
        out: dict[str, Any] = {"Reservations": [{"Instances": instances[start : start + page]}]}
        if start + page < len(instances):
            out["NextToken"] = str(start + page)
        return out


class _SageMaker:
    def __init__(self, world: World, region: str) -> None:
        self.world, self.region = world, region

    def list_training_plans(self, **params: Any) -> dict[str, Any]:
        self.world.calls["sagemaker:ListTrainingPlans"] += 1
        page = int(params.get("MaxResults", 10))
        if page > 100:
            raise Refused("ListTrainingPlans: MaxResults at most 100")
        arns = sorted(a for a, (region, _) in self.world.plans.items() if region == self.region)
        start = int(params.get("NextToken", 0))
        rows = [
            {"TrainingPlanArn": a, "InUseInstanceCount": self.world.running[a]}
            for a in arns[start : start + page]
        ]
        out: dict[str, Any] = {"TrainingPlanSummaries": rows}
        if start + page < len(arns):
            out["NextToken"] = str(start + page)
        return out


@dataclass
class _Clients:
    ec2: _Ec2
    sagemaker: _SageMaker


class Accounts:
    def __init__(self, world: World) -> None:
        self.world = world

    def clients(self, account: str | None, region: str) -> _Clients:
        return _Clients(_Ec2(self.world, region), _SageMaker(self.world, region))


def naive_round(world: World, targets: Sequence[Target]) -> dict[Target, int]:
    """The baseline: one describe call per reservation (DescribeCapacityReservations with
    its one id, DescribeTrainingPlan, DescribeInstances for its one tag value)."""
    out = {}
    for t in targets:
        if t.measure is Measure.CAPACITY_RESERVATION:
            res = _Ec2(world, t.region).describe_capacity_reservations(
                CapacityReservationIds=[t.id]
            )
            row = res["CapacityReservations"][0]
            out[t] = row["TotalInstanceCount"] - row["AvailableInstanceCount"]
        elif t.measure is Measure.TRAINING_PLAN:
            world.calls["sagemaker:DescribeTrainingPlan"] += 1
            out[t] = world.running[t.id]
        else:
            ec2 = _Ec2(world, t.region)
            filters = [{"Name": "tag:gpu-bot:request-id", "Values": [t.id]}]
            found = ec2.describe_instances(Filters=filters)
            out[t] = sum(len(r["Instances"]) for r in found["Reservations"])
    return out


def _record(n: int, world: World, rng: random.Random) -> CapacityRecord:
    rid, region = f"R{n + 1}", REGIONS[(n // 10) % len(REGIONS)]
    kind = (OptionKind.CAPACITY_BLOCK, OptionKind.ON_DEMAND_RESERVATION)[n % 2]
    kind = OptionKind.TRAINING_PLAN if n % 10 == 7 else kind
    window = n % 10 == 9  # an On-Demand window: nothing bought, tagged instances
    instances = rng.randint(1, 8)
    request = CapacityRequest(
        count=instances,
        instance_type="p5.48xlarge",
        duration_hours=72,
        start=START,
        region=region,
    )
    reservation = None
    if window:
        world.windows[rid] = region
        world.running[rid] = rng.randint(0, instances)
    else:
        res_id = (
            f"arn:aws:sagemaker:{region}:123456789012:training-plan/gpu-bot-{rid.lower()}"
            if kind is OptionKind.TRAINING_PLAN
            else f"cr-{n:017x}"
        )
        table = world.plans if kind is OptionKind.TRAINING_PLAN else world.reservations
        table[res_id] = (region, instances)
        world.running[res_id] = rng.randint(0, instances)
        reservation = Reservation(
            kind=kind,
            id=res_id,
            region=region,
            instance_type="p5.48xlarge",
            instances=instances,
            start=START,
            end=START + timedelta(days=3),
            fee_usd=1000.0,
            state="active",
        )
    return CapacityRecord(
        id=rid,
        state=State.ACTIVE,
        requester=f"U{n % 500:07d}",
        created_at=START,
        updated_at=START,
        request=request,
        text="benchmark",
        reservation=reservation,
    )


def _setup(client: redis.Redis, count: int, seed: int) -> tuple[World, RedisStore, list[Target]]:
    world, rng = World(), random.Random(seed)
    store = RedisStore(client, namespace=f"bench-{uuid.uuid4().hex[:8]}")
    pipe_size = 500
    records = [_record(n, world, rng) for n in range(count)]
    for i in range(0, count, pipe_size):
        for record in records[i : i + pipe_size]:
            store.create(record, AuditEntry(record.id, BOT, "created", "active", "active", START))
    return world, store, [target_of(r) for r in records]


def _churn(world: World, rng: random.Random) -> None:
    for key in rng.sample(sorted(world.running), len(world.running) // 10):
        total = (world.reservations.get(key) or world.plans.get(key) or ("", 8))[1]
        world.running[key] = rng.randint(0, total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    proc, url, _port, _dir = start_redis_server()
    try:
        run(redis.Redis.from_url(url, decode_responses=True), args.count, args.rounds, args.seed)
    finally:
        proc.kill()


def run(client: redis.Redis, count: int, rounds: int, seed: int) -> None:
    world, store, targets = _setup(client, count, seed)
    clock = ManualClock(START + timedelta(minutes=1))
    changes = RequestChanges(store, Reactions(clock.now), clock.now)
    once = OnceOnly(store, poster=None, clock=clock)  # type: ignore[arg-type]  # nothing is sent
    usage = UsageService(
        changes,
        AwsUsage(Accounts(world)),  # type: ignore[arg-type]
        store,
        once,
        default_catalog(),
        clock,
        approval_channel="C0APPROVALS",
        idle_alert=timedelta(hours=2),
    )
    rng = random.Random(seed)
    round_s, calls = [], []
    for n in range(rounds):
        world.calls.clear()
        began = time.perf_counter()
        with contextlib.suppress(RetryLater):  # the next round's due time
            usage.run_round()
        round_s.append(time.perf_counter() - began)
        calls.append(sum(world.calls.values()))
        batched_by_call = dict(world.calls)
        _churn(world, rng)
        clock.set(clock.now() + timedelta(minutes=5))
        print(f"round {n + 1}: {round_s[-1]:.2f} s, {calls[-1]} AWS calls {batched_by_call}")
    world.calls.clear()
    began = time.perf_counter()
    AwsUsage(Accounts(world)).running(targets)  # type: ignore[arg-type]
    meter_s, meter_calls = time.perf_counter() - began, sum(world.calls.values())
    world.calls.clear()
    began = time.perf_counter()
    naive_round(world, targets)
    naive_s, naive_calls = time.perf_counter() - began, sum(world.calls.values())
    tracemalloc.start()
    with contextlib.suppress(RetryLater):
        usage.run_round()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\n{count:,} live requests, {rounds} rounds")
    print(
        f"AWS calls per round: batched {meter_calls}, naive {naive_calls}: "
        f"{naive_calls / meter_calls:,.0f}x fewer"
    )
    print(
        f"counting alone: batched {meter_s * 1000:.0f} ms, naive {naive_s * 1000:.0f} ms "
        f"(stand-in AWS answering at once; live, each call is a round trip: at an assumed "
        f"{LIVE_CALL_S * 1000:.0f} ms a call, {meter_calls * LIVE_CALL_S:.1f} s against "
        f"{naive_calls * LIVE_CALL_S:,.0f} s, past the {ROUND_MIN} minutes between rounds, "
        f"before EC2's request throttling)"
    )
    print(
        f"round time (sample, Redis, CAS writes): median {statistics.median(round_s):.2f} s; "
        f"first {round_s[0]:.2f} s (every record written), later ones write the changed"
    )
    print(f"peak Python memory in a round: {peak / 1e6:.1f} MB ({peak / count:,.0f} B/request)")
    _bounded(store, [f"R{n + 1}" for n in range(min(count, 200))], clock.now())


def _bounded(store: RedisStore, ids: list[str], now: datetime) -> None:
    """The samples list per request stops growing at SAMPLES_KEPT entries."""
    from bot.domain.sampling import Sample

    sizes = {}
    for n in range(1, SAMPLES_KEPT + 113):
        at = now + timedelta(minutes=5 * n)
        store.add_samples({rid: Sample(at, n % 9) for rid in ids}, SAMPLES_KEPT)
        if n in (10, SAMPLES_KEPT, SAMPLES_KEPT + 112):
            sizes[n] = statistics.mean(store.samples_bytes(rid) for rid in ids)
    kept = len(store.samples(ids[0]))
    shown = ", ".join(f"after {n} samples {b:,.0f} B" for n, b in sizes.items())
    print(f"Redis bytes per request's samples: {shown} (kept: {kept})")


if __name__ == "__main__":
    main()
