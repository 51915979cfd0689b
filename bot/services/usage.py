"""Measuring what was bought: the sampling round, idle alerts, the report card, Release it.

One round job samples every live request at once (`usage-round:all`): the meter counts
what runs in all of them in batched calls, each request's sample goes on its capped list
in Redis in one round trip, and the record's `usage` is folded forward by compare-and-set
(bot.domain.sampling). The record is written only when something changed that matters
(the count, an idle step due) or six hours after its last write: between two writes the
count did not change, so folding the newer sample later gives the same hours.

An idle step due is decided in the same compare-and-set that records it (`idle_alerts`),
and its job is written with it: two workers sampling at once record it once, and the job
sends through `OnceOnly` with a key per request, stretch and step.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.reminders import Message
from bot.blocks.text import when
from bot.blocks.usage import idle_alert, idle_escalation, report_card
from bot.domain import sampling as steps
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.comparison import OptionKind
from bot.domain.events import Sampled
from bot.domain.ledger import on_demand_rate
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.sampling import (
    MEASURED,
    IdleStep,
    Sample,
    committed,
    hourly_usd,
    released,
    so_far,
    window_of,
)
from bot.domain.sampling import report_card as card_figures
from bot.domain.transitions import TransitionRefused
from bot.domain.words import percent
from bot.services.actor import Actor
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.delivery import OnceOnly
from bot.services.jobs import JobKind, JobRegistry, RequestJob, Retries, RetryLater
from bot.services.ports import Clock, Job
from bot.services.ports.usage import Measure, Target, UsageMeter, UsageSamples

log = logging.getLogger(__name__)
SAMPLE_EVERY = timedelta(minutes=5)
SAMPLES_KEPT = 288  # a day of five-minute samples per request
# The record's usage is at most this old while it runs (App Home folds it to now): a
# long reservation adds a few lines to its audit trail a day, not one per round.
WRITE_EVERY = timedelta(hours=6)
LIVE = MEASURED  # the states sampled
REPORT_AFTER = timedelta(minutes=2)


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RoundJob(_Payload):
    """Sample every live request."""


class IdleAlertJob(_Payload):
    request: str
    step: IdleStep
    stretch: datetime  # the idle stretch's start


# A round missed is made up by the next one: a few quick tries, then the next round.
SAMPLE = JobKind("usage-round", RoundJob, Retries(attempts=3, longest=timedelta(minutes=2)))
IDLE_ALERT = JobKind("idle-alert", IdleAlertJob)
REPORT = JobKind("report-card", RequestJob)
KINDS: tuple[JobKind[Any], ...] = (SAMPLE, IDLE_ALERT, REPORT)


def round_job(due: datetime) -> Job:
    return SAMPLE.job("all", due, RoundJob())


def idle_alert_job(request_id: str, step: IdleStep, stretch: datetime, due: datetime) -> Job:
    key = f"{request_id}:{int(stretch.timestamp())}:{int(step)}"
    return IDLE_ALERT.job(key, due, IdleAlertJob(request=request_id, step=step, stretch=stretch))


def report_job(request_id: str, ended: datetime) -> Job:
    """The report card, a little after the end (`ended`): the cleanup prompt's first
    look, due at the end, goes first (both are DMs, paced a second apart)."""
    return REPORT.job(request_id, ended + REPORT_AFTER, RequestJob(request=request_id))


def target_of(record: CapacityRecord) -> Target:
    res = record.reservation
    if res is None:
        return Target(record.request.account, record.request.region, Measure.TAGGED, record.id)
    measure = (
        Measure.TRAINING_PLAN
        if res.kind is OptionKind.TRAINING_PLAN
        else Measure.CAPACITY_RESERVATION
    )
    return Target(res.account, res.region, measure, res.id)


class UsageService:
    def __init__(
        self,
        changes: RequestChanges,
        meter: UsageMeter,
        samples: UsageSamples,
        delivery: OnceOnly,
        catalog: Catalog,
        clock: Clock,
        *,
        approval_channel: str,
        idle_alert: timedelta,
        every: timedelta = SAMPLE_EVERY,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.meter = meter
        self.samples = samples
        self.delivery = delivery
        self.catalog = catalog
        self.clock = clock
        self.approval_channel = approval_channel
        self.idle_alert = idle_alert
        self.every = every

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(SAMPLE, self.run_round)
        jobs.register(IDLE_ALERT, self.send_idle_alert)
        jobs.register(REPORT, lambda job: self.send_report(job.request))

    # --- the round --------------------------------------------------------------------------

    def live(self) -> list[CapacityRecord]:
        return [r for state in LIVE for r in self.store.in_state(state)]

    def run_round(self, _: RoundJob | None = None) -> int:
        """Sample every live request; returns how many were sampled. Comes back in
        `every` while any request is live."""
        now = self.clock.now()
        records = self.live()
        if not records:
            return 0
        targets = {r.id: target_of(r) for r in records}
        counts = self.meter.running(list(targets.values()))
        samples = {rid: Sample(now, counts[t]) for rid, t in targets.items() if t in counts}
        self.samples.add_samples(samples, SAMPLES_KEPT)
        for record in records:
            if record.id in samples:
                self.record(record, samples[record.id])
        raise RetryLater(now + self.every, f"next sampling round ({len(samples)} sampled)")

    def record(self, seen: CapacityRecord, sample: Sample) -> CapacityRecord | None:
        """Fold `sample` into the request's usage, and decide its idle step, by CAS."""
        now = sample.at

        def sampled(r: CapacityRecord) -> Change | None:
            step = steps.sampled(r, sample, self.idle_alert, WRITE_EVERY)
            if step is None:
                return None
            usage = step.record.usage
            assert usage is not None
            pct = usage.utilisation_pct
            detail = (
                f"{sample.running} running; {percent(pct / 100)} used so far"
                if pct is not None
                else ""
            )
            if isinstance(step.event, Sampled) and step.event.alert:
                alert = IdleStep(step.event.alert)
                detail += f"; idle since {when(usage.idle_since or now)}: {alert.name.lower()}"
            return Change.of(step, "sampled", BOT, detail)

        if sampled(seen) is None:
            return seen  # nothing to write on what was just read: no second read
        saved, _ = self.changes.apply(seen.id, sampled)
        return saved

    # --- idle alerts ------------------------------------------------------------------------

    def on_demand_hourly(self, record: CapacityRecord) -> float | None:
        """What an instance of the request's type costs an hour On-Demand: the rate it
        was quoted at (the ledger prices the hours used with it too), else the catalog's
        (SageMaker's rate for a training plan, when the catalog has one)."""
        quoted = on_demand_rate(record)
        if quoted is not None:
            return quoted
        res = record.reservation
        instance_type = res.instance_type if res else record.request.instance_type
        region = res.region if res else record.request.region
        kinds = [PriceKind.ON_DEMAND]
        if res is not None and res.kind is OptionKind.TRAINING_PLAN:
            kinds.insert(0, PriceKind.SAGEMAKER_ON_DEMAND)
        for kind in kinds:
            price = self.catalog.price(kind, instance_type, region)
            if price is not None:
                return price.usd_per_hour
        return None

    def send_idle_alert(self, job: IdleAlertJob) -> None:
        record = self.store.get(job.request)
        if record is None or record.state not in LIVE or record.reservation is None:
            return
        usage = record.usage
        if usage is None or usage.idle_since != job.stretch:
            return  # something ran since: that stretch is over
        now = self.clock.now()
        res = record.reservation
        rate = hourly_usd(record, self.on_demand_hourly(record))
        idle_for = now - job.stretch
        stretch_usd = rate * idle_for.total_seconds() / 3600 if rate is not None else None
        # What idleness cost in all: the instance-hours billed and not used, at the rate.
        measured = so_far(usage, window_of(record), now)
        idle_hours = (
            measured.billed_instance_hours - measured.used_instance_hours if measured else 0
        )
        so_far_usd = rate * idle_hours / res.instances if rate and res.instances else None
        releasable = res.kind is OptionKind.ON_DEMAND_RESERVATION and not committed(record)
        key = f"idle:{record.id}:{int(job.stretch.timestamp())}:{int(job.step)}"
        if job.step is IdleStep.ESCALATE:
            message = idle_escalation(
                record.id, record.requester, res.kind, idle_for, stretch_usd, releasable
            )
            self._send(key, self.approval_channel, message)
            return
        # Told after the approvers (a gap in sampling skipped the requester's steps): say so.
        step = IdleStep.ESCALATE if usage.idle_alerts >= IdleStep.ESCALATE else job.step
        message = idle_alert(
            record.id, res.kind, step, idle_for, stretch_usd, so_far_usd, releasable
        )
        self._send(key, record.requester, message)

    def _send(self, key: str, channel: str, message: Message, thread: str | None = None) -> None:
        self.delivery.send(key, channel, message.text, message.blocks, thread)

    # --- Release it -------------------------------------------------------------------------

    def release(self, request_id: str, actor: Actor) -> str:
        """An idle ODCR given back now: ended, and cleaned up under the cleanup prompt's
        rules (only what carries the request's tag is deleted, and verified gone)."""
        now = self.clock.now()
        refusal: list[str] = []

        def release_now(r: CapacityRecord) -> Change | None:
            try:
                moved = released(r, actor, now)
            except TransitionRefused as refused:
                refusal.append(str(refused))
                return None
            detail = f"{r.reservation.id if r.reservation else ''} at {when(now)}"
            return Change(moved.record, moved.event, "released", actor.user, detail)

        record, change = self.changes.apply(request_id, release_now)
        if record is None:
            return f"There is no request {request_id}."
        if change is None:
            return refusal[0] if refusal else "Nothing changed."
        return (
            f"Releasing {request_id}: its reservation is cancelled and cleaned up; you will hear."
        )

    # --- the report card --------------------------------------------------------------------

    def send_report(self, request_id: str) -> None:
        """When it ended: the last count held to the end, then the card, to the requester
        and in the approval card's thread."""
        record = self._final_usage(request_id)
        if record is None:
            return
        card = card_figures(record, self.on_demand_hourly(record))
        if card is None:
            return
        message = report_card(card)
        self._send(f"report:{record.id}", record.requester, message)
        card_message = record.approval_message
        if card_message is not None:
            thread = card_message.ts
            self._send(f"report-thread:{record.id}", card_message.channel, message, thread)

    def _final_usage(self, request_id: str) -> CapacityRecord | None:
        def closed(r: CapacityRecord) -> Change | None:
            step = steps.usage_closed(r)
            if step is None or step.record.usage is None:
                return None
            detail = f"{step.record.usage.used_instance_hours:.1f} instance-hours used in all"
            return Change.of(step, "sampled", BOT, detail)

        record, _ = self.changes.apply(request_id, closed)
        if record is None or record.state not in (State.EXPIRED, State.CLEANED_UP):
            return None
        return record
