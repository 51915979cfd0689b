"""Every answer at 1,000, 10,000 and 100,000 requests, in one run: what a Slack user waits
for, timed through the real Bolt app over HTTP (signed payloads, the fake Web API) on a
throwaway Redis filled through the project's own classes, so the growth is measured, not
guessed.

    python -m benchmarks.scale                            # N = 1,000, 10,000, 100,000
    python -m benchmarks.scale --sizes 1000,10000 --reps 20

The requests are made from real quotes (the sandbox market's prices) in every state, over
20 teams with budgets, 300 requesters and 24 months, each written by the store's
compare-and-set with its ledger settled and its audit trail (about six entries), ended
reservations with their measured use. Between sizes the store grows; the same operations
are timed again:

- the budget check of a submission and the learned utilisation (service calls);
- `/gpu spend` (an approver: every team; a requester: their team), `/gpu list waiting`,
  App Home of an approver and of a requester, `/gpu status`, a submission, an Approve
  click (until its modal opens) and its confirmation (until the request is approved):
  from the signed request to what Slack is sent;
- a month's spend report for every team with every row (what `gpu-bot spend` reads);
- at the largest size, an Approve click while eight `/gpu spend` run at once.

Targets (issue: one ledger): every Slack-path answer at N = 100,000 at most 200 ms (p95)
and at most 2x its time at N = 1,000; a month's full report at most 1 s; the memory the
answers allocate flat in N; the Approve modal within 1 s beside eight spend reports.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import redis

from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.audit import BOT, AuditEntry
from bot.domain.comparison import OptionKind
from bot.domain.decisions import Approval
from bot.domain.ledger import settle
from bot.domain.lifecycle import State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, Choice, Reservation
from bot.domain.utilisation import Usage
from tests import slack_payloads as payloads
from tests.conftest import start_redis_server
from tests.slack_fake import FakeSlack
from tests.slack_harness import APPROVER, BotUnderTest
from tests.unit.test_comparison import quote, req

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
MONTH = "2026-12"
TEAMS = 20
REQUESTERS = 300
ME = "U0BENCHREQ"
FRESH = 10_000_000  # the numbers of the requests made for one timed run
HISTORY = 5  # audit entries beside the one each record is created with
SLACK_TARGET_S = 0.2
GROWTH_TARGET = 2.0
REPORT_TARGET_S = 1.0
MODAL_TARGET_S = 1.0

# Of every 100 requests, how many are in each state (most requests ever made have ended).
STATES = (
    [State.CLEANED_UP] * 30
    + [State.EXPIRED] * 18
    + [State.REJECTED] * 8
    + [State.TIMED_OUT] * 6
    + [State.CANCELLED] * 6
    + [State.QUOTED] * 6
    + [State.FAILED] * 3
    + [State.PENDING_APPROVAL] * 3
    + [State.ACTIVE] * 6
    + [State.SCHEDULED] * 6
    + [State.PAYMENT_PENDING] * 2
    + [State.APPROVED] * 1
    + [State.PURCHASE_UNKNOWN] * 1
    + [State.DRAFT] * 4
)
KINDS = (
    [OptionKind.CAPACITY_BLOCK] * 5
    + [OptionKind.ON_DEMAND] * 2
    + [OptionKind.TRAINING_PLAN] * 1
    + [OptionKind.SPOT] * 1
    + [OptionKind.ON_DEMAND_RESERVATION] * 1
)
BOUGHT = frozenset(
    {State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.EXPIRED, State.CLEANED_UP}
)


def team(n: int) -> str:
    return f"team{n % TEAMS:02d}"


class Filler:
    """Makes request number n, realistic and cheap: one quote per kind, copied."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        from bot.domain.request import Environment

        self.quotes: dict[OptionKind, Quote] = {
            OptionKind.CAPACITY_BLOCK: quote(req(environment=Environment.EC2, utilization_pct=90)),
            OptionKind.ON_DEMAND: quote(req(environment=Environment.EC2, utilization_pct=40)),
            OptionKind.SPOT: quote(req(environment=Environment.EC2, interruptible=True)),
            OptionKind.ON_DEMAND_RESERVATION: quote(req(environment=Environment.EC2)),
            OptionKind.TRAINING_PLAN: quote(req(environment=Environment.SAGEMAKER)),
        }

    def record(
        self,
        n: int,
        state: State | None = None,
        requester: str | None = None,
        kind: OptionKind | None = None,
    ) -> CapacityRecord:
        state = state or STATES[n % len(STATES)]
        kind = kind or KINDS[(n // 7) % len(KINDS)]
        q = self.quotes[kind]
        option = q.option(kind)
        # Spread over two years, ending in this month: most of them long over (a request
        # made for one timed run, n past the filled ones, starts in nine days).
        back = (n * 7919) % 730 if n < FRESH else 0
        start = NOW + timedelta(days=9) - timedelta(days=back)
        request = q.request.model_copy(update={"start": start})
        choice = None
        if state is not State.DRAFT:
            choice = Choice(
                kind=kind, total_usd=option.total_usd or 100.0, most_usd=option.most_usd
            )
        record = CapacityRecord(
            id=f"R{n}",
            state=state,
            requester=requester or f"U{n % REQUESTERS:08d}",
            created_at=start - timedelta(days=10),
            updated_at=start,
            request=request,
            text=f"2x p5.48xlarge 3d from {start:%Y-%m-%d}",
            quote=q if state is not State.DRAFT else None,
            choice=choice,
            reason="load test before launch",
            team=team(n),
            approvals=(Approval(user=APPROVER, at=start - timedelta(days=9)),)
            if state in BOUGHT or state is State.APPROVED
            else (),
        )
        if state in BOUGHT and kind not in (OptionKind.ON_DEMAND, OptionKind.SPOT):
            record = record.model_copy(update={"reservation": self._reservation(n, kind, start)})
        if state in (State.EXPIRED, State.CLEANED_UP, State.ACTIVE):
            used = 48.0 * ((n * 37) % 100) / 100
            usage = Usage(used_instance_hours=used, billed_instance_hours=144.0, running=1)
            record = record.model_copy(update={"usage": usage})
        return settle(record, start, "made")

    def _reservation(self, n: int, kind: OptionKind, start: datetime) -> Reservation:
        option = self.quotes[kind].option(kind)
        fee = option.total_usd if kind is not OptionKind.ON_DEMAND_RESERVATION else None
        return Reservation(
            kind=kind,
            id=f"cr-{n:017x}",
            region="us-east-1",
            availability_zone="us-east-1a",
            instance_type="p5.48xlarge",
            instances=2,
            start=start,
            end=start + timedelta(days=3),
            fee_usd=fee,
            state="active",
        )

    def write(self, record: CapacityRecord) -> None:
        entry = AuditEntry(record.id, BOT, "created", "", record.state.value, record.created_at)
        self.store.create(record, entry)
        pipe = self.store.redis.pipeline(transaction=False)
        for i in range(HISTORY):
            fields = AuditEntry(
                record.id, APPROVER, f"step {i}", "draft", record.state.value,
                record.updated_at, usd=record.total_usd, detail="as it went",
            ).fields()  # fmt: skip
            pipe.xadd(self.store.key("audit"), dict(zip(fields[::2], fields[1::2], strict=True)))
            pipe.xadd(
                self.store.key("audit", record.id),
                dict(zip(fields[::2], fields[1::2], strict=True)),
            )
        pipe.execute()

    def fill(self, start: int, stop: int) -> None:
        for n in range(start, stop):
            self.write(self.record(n))


# --- timing ---------------------------------------------------------------------------------


def until(
    found: Callable[[], bool], timeout: float = 30.0, bot: BotUnderTest | None = None
) -> None:
    deadline = time.perf_counter() + timeout
    while not found():
        if time.perf_counter() > deadline:
            raise TimeoutError("no answer" + (f": {bot.crashes.report()}" if bot else ""))
        time.sleep(0.0005)


class Timer:
    def __init__(self, bot: BotUnderTest, fake: FakeSlack, filler: Filler) -> None:
        self.bot, self.fake, self.filler = bot, fake, filler
        self.next_id = FRESH

    def command(self, text: str, user: str) -> Callable[[], None]:
        def run() -> None:
            token, url = self.bot.new_response_url()
            self.bot.post(*payloads.slash_command(text, user, url))
            until(lambda: any(c.token == token for c in self.fake.of("response_url")), bot=self.bot)

        return run

    def home(self, user: str) -> Callable[[], None]:
        def run() -> None:
            seen = len(self.fake.of("views.publish"))
            event = {"type": "app_home_opened", "user": user, "tab": "home", "channel": "D0X"}
            self.bot.post(*payloads.event(event))
            until(lambda: len(self.fake.of("views.publish")) > seen)

        return run

    def fresh(self, state: State, requester: str) -> str:
        """A request made for one timed run (a submission, an approval)."""
        self.next_id += 1
        n = self.next_id
        record = self.filler.record(n, state, requester, OptionKind.ON_DEMAND)
        record = record.model_copy(update={"team": team(0)})
        if state is State.PENDING_APPROVAL:
            record = settle(
                record.model_copy(update={"approval_deadline": NOW + timedelta(days=1)}),
                NOW,
                "made",
            )
        self.filler.write(record)
        return record.id

    def submit(self) -> Callable[[], None]:
        def run() -> None:
            request_id = self.fresh(State.QUOTED, ME)
            token, url = self.bot.new_response_url()
            values = {
                FormBlock.CHOICE.value: payloads.select("on-demand:0"),
                FormBlock.REASON.value: payloads.text_input("load test"),
            }
            meta = f'{{"request": "{request_id}", "response_url": "{url}"}}'
            self.bot.post(*payloads.view_submission(CallbackId.SUBMIT.value, values, ME, meta))
            until(lambda: any(c.token == token for c in self.fake.of("response_url")), bot=self.bot)

        return run

    def approve_click(self, request_id: str | None = None) -> Callable[[], None]:
        def run() -> None:
            rid = request_id or self.fresh(State.PENDING_APPROVAL, ME)
            trigger = f"T-{uuid.uuid4().hex}"
            self.bot.click(ActionId.APPROVE.value, rid, APPROVER, trigger_id=trigger)
            until(
                lambda: any(c.args.get("trigger_id") == trigger for c in self.fake.of("views.open"))
            )

        return run

    def approve(self) -> Callable[[], None]:
        def run() -> None:
            rid = self.fresh(State.PENDING_APPROVAL, ME)
            view = self.bot.approval_form(rid, APPROVER)
            self.bot.submit_view(view["callback_id"], {}, APPROVER, view["private_metadata"])
            until(lambda: self.bot.services.store.get(rid).state is not State.PENDING_APPROVAL)  # type: ignore[union-attr]

        return run


def measure(run: Callable[[], None], reps: int, fake: FakeSlack) -> list[float]:
    run()  # warm
    times = []
    for _ in range(reps):
        fake.reset()
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def p95(times: list[float]) -> float:
    return sorted(times)[max(0, round(0.95 * len(times)) - 1)]


def peak_kb(run: Callable[[], None]) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def modal_under_load(timer: Timer, spend: Callable[[], None]) -> float:
    """An Approve click's modal while eight `/gpu spend` run at once."""
    rid = timer.fresh(State.PENDING_APPROVAL, ME)
    start = threading.Event()
    took: list[float] = []

    def reports() -> None:
        start.wait()
        spend()

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(reports) for _ in range(8)]
        start.set()
        t0 = time.perf_counter()
        timer.approve_click(rid)()
        took.append(time.perf_counter() - t0)
        for f in futures:
            f.result()
    return took[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    proc, url, _port, _dir = start_redis_server("--appendonly", "no")
    fake = FakeSlack(groups={})
    try:
        client = redis.Redis.from_url(url, decode_responses=True)
        store = RedisStore(client, namespace="scale")
        teams = ";".join(f"{team(t)}=C0TEAM{t:02d}" for t in range(TEAMS))
        budgets = ",".join(f"{team(t)}={1_000_000 + t}" for t in range(TEAMS))
        clock = ManualClock(NOW)
        bot = BotUnderTest(fake, store, clock, teams=teams, budgets=budgets)
        filler = Filler(store)
        timer = Timer(bot, fake, filler)
        base_memory = int(client.info("memory")["used_memory"])
        pending = filler.record(FRESH - 1, State.PENDING_APPROVAL, ME)
        ops: dict[str, Callable[[], None]] = {
            "budget check (a submission's)": lambda: bot.services.spending.check(pending, 4983.55),
            "learned utilisation": lambda: bot.services.spending.learned(team(3)),
            "/gpu spend (an approver, every team)": timer.command(f"spend {MONTH}", APPROVER),
            "/gpu spend (a requester's team)": timer.command(f"spend {MONTH}", ME),
            "/gpu list waiting": timer.command("list waiting", APPROVER),
            "App Home of an approver": timer.home(APPROVER),
            "App Home of a requester": timer.home(ME),
            "/gpu status R…": timer.command("status R7", APPROVER),
            "submit: the Submitted message": timer.submit(),
            "Approve click: its modal opens": timer.approve_click(),
            "approve: confirmed to approved": timer.approve(),
        }
        full = {
            "a month's full report, every team": lambda: bot.services.spending.report(
                MONTH, rows=None
            )
        }
        results: dict[str, dict[int, list[float]]] = {name: {} for name in [*ops, *full]}
        memory: dict[str, dict[int, float]] = {name: {} for name in ops}
        per_request: dict[int, float] = {}
        filled = 0
        for size in sizes:
            t0 = time.perf_counter()
            filler.fill(filled, size)
            filled = size
            fill_s = time.perf_counter() - t0
            per_request[size] = (int(client.info("memory")["used_memory"]) - base_memory) / size
            print(
                f"N = {size:,}: filled in {fill_s:,.0f} s; "
                f"Redis {per_request[size] / 1024:.1f} KB a request",
                flush=True,
            )
            for name, run in {**ops, **full}.items():
                print(f"  {name}", flush=True)
                results[name][size] = measure(run, args.reps, fake)
            for name, run in ops.items():
                memory[name][size] = peak_kb(run)
        loaded = modal_under_load(timer, ops["/gpu spend (an approver, every team)"])
        first, last = sizes[0], sizes[-1]
        print()
        head = " | ".join(f"N={s:,} p50 / p95 ms" for s in sizes)
        print(f"| operation | {head} | p95 x (N={last:,} / N={first:,}) | target |")
        print("|---|" + "---|" * len(sizes) + "---|---|")
        for name, by_size in results.items():
            cells = " | ".join(
                f"{statistics.median(by_size[s]) * 1000:.1f} / {p95(by_size[s]) * 1000:.1f}"
                for s in sizes
            )
            ratio = p95(by_size[last]) / p95(by_size[first])
            limit = REPORT_TARGET_S if name in full else SLACK_TARGET_S
            met = p95(by_size[last]) <= limit and (name in full or ratio <= GROWTH_TARGET)
            goal = f"<= {limit * 1000:.0f} ms" + ("" if name in full else f", <= {GROWTH_TARGET}x")
            print(f"| {name} | {cells} | {ratio:.2f}x | {goal}: {'met' if met else 'MISSED'} |")
        print()
        print(
            "| memory the answer allocates (peak, KB) | "
            + " | ".join(f"N={s:,}" for s in sizes)
            + " | growth |"
        )
        print("|---|" + "---|" * len(sizes) + "---|")
        for name, by_size in memory.items():
            cells = " | ".join(f"{by_size[s]:,.0f}" for s in sizes)
            print(f"| {name} | {cells} | {by_size[last] / max(by_size[first], 1):.2f}x |")
        print()
        print(
            "Redis per request: "
            + ", ".join(f"{per_request[s] / 1024:.1f} KB at N={s:,}" for s in sizes)
        )
        verdict = "met" if loaded <= MODAL_TARGET_S else "MISSED"
        print(
            f"Approve modal beside eight /gpu spend at N={last:,}: {loaded * 1000:.0f} ms "
            f"(target {MODAL_TARGET_S * 1000:.0f} ms: {verdict})"
        )
        bot.close()
    finally:
        fake.close()
        proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
