"""Used instance-hours from samples, idle stretches, and the report card's figures: pure.

The rule: a sample says how many instances ran at that moment, and that count holds until
the next sample (and, for the last one, until the reservation ends). The first sample's
count is also taken to hold back to the start of the window: the bot looks right after a
reservation becomes active, and a reservation nobody launched into is idle from its start.
Billed instance-hours are the reservation's instances over the same time, so utilisation
is used over billed. Only time inside the window counts.

An idle stretch starts at the first sample that finds nothing running (the window's start
when the first sample does) and ends at a sample that finds something running. While it
bills, a stretch is told about once at each step (`IdleStep`), never twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

from bot.domain import events as on
from bot.domain.cleanup import CleanupPrompt, PromptStatus
from bot.domain.comparison import OptionKind
from bot.domain.future_reservation import COMMITTED
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.transitions import Transition, TransitionRefused
from bot.domain.utilisation import Usage
from bot.domain.visibility import Viewer

REPEAT_IDLE = timedelta(hours=12)  # an idle stretch is told about again after this
ESCALATE_IDLE = timedelta(hours=24)  # and the approval channel after this
# A reservation that nothing runs in bills; On-Demand and Spot windows bill what runs.
BILLS_WHEN_IDLE = frozenset(
    {OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN, OptionKind.ON_DEMAND_RESERVATION}
)


@dataclass(frozen=True)
class Sample:
    at: datetime
    running: int


@dataclass(frozen=True)
class Window:
    """What is measured: `instances` billed from `start` to `end`."""

    start: datetime
    end: datetime
    instances: int


def window_of(record: CapacityRecord) -> Window:
    """The reservation's window and size, or the On-Demand / Spot window asked for."""
    res = record.reservation
    if res is not None:
        return Window(res.start, res.end, res.instances)
    return Window(record.request.start, record.request.end, record.request.count)


def _hours(since: datetime, until: datetime) -> float:
    return max((until - since).total_seconds(), 0.0) / 3600.0


def advance(usage: Usage | None, sample: Sample, window: Window) -> Usage:
    """`usage` with `sample` folded in. A sample older than the last one changes nothing,
    nor does one at the same moment with the same count (two workers sampling at once
    count it once); one at the same moment with another count replaces the count."""
    if sample.running < 0:
        raise ValueError(f"a running count cannot be negative: {sample.running}")
    first = usage is None or usage.last_sample_at is None
    usage = usage or Usage()
    last = usage.last_sample_at
    if last is not None and (
        sample.at < last or (sample.at == last and sample.running == usage.running)
    ):
        return usage
    since = window.start if last is None else max(last, window.start)
    until = min(sample.at, window.end)
    held = sample.running if first else usage.running
    hours = _hours(since, until) if until > since else 0.0
    if sample.running > 0:
        idle_since, alerts = None, 0
    elif first or usage.running > 0 or usage.idle_since is None:
        idle_since, alerts = (window.start if first else sample.at), 0
    else:
        idle_since, alerts = usage.idle_since, usage.idle_alerts
    return usage.model_copy(
        update={
            "used_instance_hours": usage.used_instance_hours + held * hours,
            "billed_instance_hours": usage.billed_instance_hours + window.instances * hours,
            "last_sample_at": sample.at,
            "running": sample.running,
            "idle_since": idle_since,
            "idle_alerts": alerts,
        }
    )


def until_end(usage: Usage | None, window: Window) -> Usage:
    """The usage over the whole window: the last count held to the end."""
    usage = usage or Usage()
    if usage.last_sample_at is not None and usage.last_sample_at >= window.end:
        return usage
    return advance(usage, Sample(window.end, usage.running), window).model_copy(
        update={"idle_since": usage.idle_since, "idle_alerts": usage.idle_alerts}
    )


def so_far(usage: Usage | None, window: Window, now: datetime) -> Usage | None:
    """The usage up to `now`: the last count held since the last sample (the record is
    written when the count changes, so this is what the samples since would add)."""
    if usage is None or usage.last_sample_at is None or now <= usage.last_sample_at:
        return usage
    held = advance(usage, Sample(min(now, window.end), usage.running), window)
    return held.model_copy(
        update={"idle_since": usage.idle_since, "idle_alerts": usage.idle_alerts}
    )


# --- idle alerts ----------------------------------------------------------------------------


class IdleStep(IntEnum):
    NONE = 0
    TELL = 1  # the requester, after GPU_BOT_IDLE_ALERT
    AGAIN = 2  # the requester again, after 12 h
    ESCALATE = 3  # the approval channel, after 24 h


def idle_step(idle_for: timedelta, first: timedelta) -> IdleStep:
    """How far an idle stretch of `idle_for` has gone (`first`: GPU_BOT_IDLE_ALERT)."""
    steps = (first, max(first, REPEAT_IDLE), max(first, ESCALATE_IDLE))
    return IdleStep(sum(1 for threshold in steps if idle_for >= threshold))


def alert_due(usage: Usage, now: datetime, first: timedelta) -> IdleStep:
    """The step to tell now, or NONE: told already, running, or not idle long enough."""
    if usage.idle_since is None or usage.running > 0:
        return IdleStep.NONE
    step = idle_step(now - usage.idle_since, first)
    return step if step > usage.idle_alerts else IdleStep.NONE


def hourly_usd(record: CapacityRecord, on_demand_hourly: float | None) -> float | None:
    """What the reservation costs an hour, used or not: a prepaid fee spread over its
    window, an ODCR its instances at the On-Demand rate."""
    res = record.reservation
    if res is None:
        return None
    if res.kind is OptionKind.ON_DEMAND_RESERVATION:
        return on_demand_hourly * res.instances if on_demand_hourly is not None else None
    hours = _hours(res.start, res.end)
    paid = record.money.committed_usd
    return paid / hours if paid > 0 and hours > 0 else None


# --- Release it ----------------------------------------------------------------------------

MEASURED = frozenset({State.ACTIVE, State.EXPIRING})  # the states a reservation bills in


def committed(record: CapacityRecord) -> bool:
    """An ODCR bought ahead (future-dated) is committed for its whole window."""
    return record.attempt is not None and record.attempt.start_ahead


def released(record: CapacityRecord, who: Viewer, now: datetime) -> Transition:
    """An idle ODCR given back now, by its requester or an approver (as the cleanup
    prompt's answers): it ends now, its use is counted to now, and the cleanup starts at
    once (it deletes only what carries the request's tag, and is resolved when a fresh look
    finds nothing)."""
    res = record.reservation
    if who.user != record.requester and not who.is_approver:
        raise TransitionRefused(f"Only the requester of {record.id} or an approver can release it.")
    if res is None or res.kind is not OptionKind.ON_DEMAND_RESERVATION:
        what = res.kind.label if res else "request"
        raise TransitionRefused(
            f"Only an On-Demand Capacity Reservation can be released early; this {what} "
            "cannot be cancelled."
        )
    if record.state not in MEASURED:
        raise TransitionRefused(
            f"Request {record.id} is {record.state.label}: there is nothing to release."
        )
    if committed(record):
        raise TransitionRefused(f"{record.id} cannot be released: {COMMITTED}.")
    running = record.usage.running if record.usage else 0
    usage = advance(record.usage, Sample(now, running), window_of(record))
    prompt = CleanupPrompt(status=PromptStatus.CLEANING, next_at=now, answered_by=who.user)
    update = {
        "state": State.EXPIRED,
        # Cancelled at once by the cleanup this starts (AWS's word for a cancelled ODCR):
        # the card must not go on saying "active".
        "reservation": res.model_copy(
            update={"end": now, "state": "cancelled", "state_reason": "released early"}
        ),
        "usage": usage,
        "cleanup": prompt,
        "updated_at": now,
    }
    return Transition(record.model_copy(update=update), on.Released())


# --- the report card ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportCard:
    request_id: str
    kind: OptionKind
    instance_type: str
    instances: int
    paid_usd: float
    used_instance_hours: float
    billed_instance_hours: float
    on_demand_usd: float | None  # the hours used at the On-Demand rate (None: no price)

    @property
    def utilisation_pct(self) -> float:
        if self.billed_instance_hours <= 0:
            return 0.0
        return 100.0 * self.used_instance_hours / self.billed_instance_hours

    @property
    def saved_usd(self) -> float | None:
        """Positive: the reservation cost less than On-Demand for the same use."""
        if self.on_demand_usd is None:
            return None
        return round(self.on_demand_usd - self.paid_usd, 2)


def report_card(record: CapacityRecord, on_demand_hourly: float | None) -> ReportCard | None:
    """The figures when a reservation ends (None for On-Demand and Spot windows, which
    bill only what runs)."""
    res = record.reservation
    if res is None or res.kind not in BILLS_WHEN_IDLE:
        return None
    window = Window(res.start, res.end, res.instances)
    usage = until_end(record.usage, window)
    # The ledger's figure: paid once it ended (an ODCR's billed hours, a block's fee).
    paid = record.money.committed_usd
    od = on_demand_hourly * usage.used_instance_hours if on_demand_hourly is not None else None
    return ReportCard(
        request_id=record.id,
        kind=res.kind,
        instance_type=res.instance_type,
        instances=res.instances,
        paid_usd=paid,
        used_instance_hours=usage.used_instance_hours,
        billed_instance_hours=usage.billed_instance_hours,
        on_demand_usd=round(od, 2) if od is not None else None,
    )


# --- the record's steps ---------------------------------------------------------------------


def bills_now(record: CapacityRecord, now: datetime) -> bool:
    """A reservation that bills whether anything runs, inside its window."""
    res = record.reservation
    return res is not None and res.kind in BILLS_WHEN_IDLE and res.start <= now < res.end


def sampled(
    record: CapacityRecord, sample: Sample, idle_alert: timedelta, write_every: timedelta
) -> Transition | None:
    """`sample` folded into the request's usage, with the idle step it makes due (the
    step is decided here, in the write that records it, so that it is told once). None
    when nothing that matters changed: the same count, no step due, and the last write
    younger than `write_every` (folding the sample later gives the same hours)."""
    if record.state not in MEASURED:
        return None
    now = sample.at
    old = record.usage
    usage = advance(old, sample, window_of(record))
    step = alert_due(usage, now, idle_alert) if bills_now(record, now) else IdleStep.NONE
    told = usage.idle_alerts
    if step is not IdleStep.NONE:
        usage = usage.model_copy(update={"idle_alerts": int(step)})
    last = old.last_sample_at if old is not None else None
    stale = last is None or now - last >= write_every
    if old is not None and not stale and old.running == usage.running and not step:
        return None
    stretch = usage.idle_since.isoformat() if usage.idle_since and step else ""
    return Transition(
        record.model_copy(update={"usage": usage}),
        on.Sampled(alert=int(step), stretch=stretch, told=told if step else 0),
    )


def usage_closed(record: CapacityRecord) -> Transition | None:
    """Once it ended: the last count held to the end of the window (the report card's
    figures come from this). None when that changes nothing."""
    if record.state not in (State.EXPIRED, State.CLEANED_UP) or record.reservation is None:
        return None
    usage = until_end(record.usage, window_of(record))
    if usage == record.usage:
        return None
    return Transition(record.model_copy(update={"usage": usage}), on.Sampled())
