"""Used instance-hours, idle stretches and the report card, against a minute-by-minute
simulation written separately from the interval arithmetic in bot.domain.sampling."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from bot.domain import events as on
from bot.domain.comparison import OptionKind
from bot.domain.ledger import settle
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Choice, PurchaseAttempt, Reservation
from bot.domain.sampling import (
    IdleStep,
    Sample,
    Window,
    advance,
    alert_due,
    committed,
    idle_step,
    released,
    report_card,
    sampled,
    so_far,
    until_end,
    usage_closed,
)
from bot.domain.transitions import TransitionRefused
from bot.domain.utilisation import Usage
from tests.factories import make_record

T0 = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)


def record_with_reservation(
    kind: OptionKind, start: datetime, end: datetime, instances: int, fee_usd: float | None = None
) -> CapacityRecord:
    res = Reservation(
        kind=kind,
        id="cr-0123456789abcdef0",
        region="us-east-1",
        instance_type="p5.48xlarge",
        instances=instances,
        start=start,
        end=end,
        fee_usd=fee_usd,
        state="active",
    )
    choice = Choice(kind=kind, total_usd=fee_usd or 0.0)
    return make_record(state=State.ACTIVE, reservation=res, choice=choice)


def oracle(samples: list[Sample], window: Window) -> tuple[float, float]:
    """Minute by minute: the count of the latest sample at or before the minute (the
    first sample's before it), until the window ends; billed is every minute sampled."""
    used = billed = 0
    last = max(s.at for s in samples)
    minute = window.start
    while minute < min(window.end, last):
        seen = [s for s in samples if s.at <= minute]
        count = (max(seen, key=lambda s: s.at) if seen else samples[0]).running
        used += count
        billed += window.instances
        minute += timedelta(minutes=1)
    return used / 60, billed / 60


def fold(samples: list[Sample], window: Window) -> Usage:
    usage: Usage | None = None
    for sample in samples:
        usage = advance(usage, sample, window)
    assert usage is not None
    return usage


@pytest.mark.parametrize("seed", range(25))
def test_used_hours_match_a_minute_by_minute_simulation(seed: int) -> None:
    rng = random.Random(seed)
    window = Window(T0, T0 + timedelta(hours=rng.randint(2, 30)), rng.randint(1, 8))
    at, samples = T0 + timedelta(minutes=rng.randint(0, 10)), []
    while at < window.end + timedelta(minutes=30):
        samples.append(Sample(at, rng.randint(0, window.instances)))
        at += timedelta(minutes=rng.choice([1, 5, 5, 5, 17, 60]))
    usage = fold(samples, window)
    used, billed = oracle(samples, window)
    assert usage.used_instance_hours == pytest.approx(used)
    assert usage.billed_instance_hours == pytest.approx(billed)


def test_sampling_at_every_change_gives_the_true_instance_hours() -> None:
    window = Window(T0, T0 + timedelta(hours=10), 4)
    # 0 for 1 h, 4 for 3 h, 2 for 2 h, 0 for 4 h: 12 + 4 = 16 instance-hours of 40.
    changes = [(0, 0), (1, 4), (4, 2), (6, 0)]
    usage = until_end(
        fold([Sample(T0 + timedelta(hours=h), n) for h, n in changes], window), window
    )
    assert usage.used_instance_hours == pytest.approx(16.0)
    assert usage.billed_instance_hours == pytest.approx(40.0)
    assert usage.utilisation_pct == pytest.approx(40.0)


def test_a_repeated_or_older_sample_counts_once() -> None:
    window = Window(T0, T0 + timedelta(hours=5), 2)
    once = fold([Sample(T0, 2), Sample(T0 + timedelta(hours=1), 1)], window)
    again = advance(once, Sample(T0 + timedelta(hours=1), 1), window)
    older = advance(once, Sample(T0 + timedelta(minutes=30), 0), window)
    assert again == once == older
    # The same moment, another count (stopped right after a round): the count is replaced.
    stopped = advance(once, Sample(T0 + timedelta(hours=1), 0), window)
    assert stopped.used_instance_hours == once.used_instance_hours
    assert (stopped.running, stopped.idle_since) == (0, T0 + timedelta(hours=1))


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        advance(None, Sample(T0, -1), Window(T0, T0 + timedelta(hours=1), 1))


def test_an_idle_stretch_starts_at_the_first_empty_sample_and_ends_when_something_runs() -> None:
    window = Window(T0, T0 + timedelta(days=3), 2)
    usage = fold([Sample(T0 + timedelta(minutes=5), 0)], window)
    assert usage.idle_since == T0  # nothing ran from the start
    usage = fold([Sample(T0, 2), Sample(T0 + timedelta(hours=1), 0)], window)
    assert usage.idle_since == T0 + timedelta(hours=1)
    usage = advance(usage, Sample(T0 + timedelta(hours=2), 1), window)
    assert usage.idle_since is None


def test_idle_steps_at_the_alert_then_12_h_then_24_h() -> None:
    first = timedelta(hours=2)
    assert idle_step(timedelta(hours=1, minutes=59), first) is IdleStep.NONE
    assert idle_step(timedelta(hours=2), first) is IdleStep.TELL
    assert idle_step(timedelta(hours=12), first) is IdleStep.AGAIN
    assert idle_step(timedelta(hours=30), first) is IdleStep.ESCALATE
    usage = Usage(idle_since=T0, idle_alerts=1)
    assert alert_due(usage, T0 + timedelta(hours=3), first) is IdleStep.NONE  # told already
    assert alert_due(usage, T0 + timedelta(hours=12), first) is IdleStep.AGAIN


def test_report_card_figures() -> None:
    # A 2-instance block for 10 h at $700: 16 instance-hours used of 20, On-Demand $98.32/h.
    record = record_with_reservation(
        OptionKind.CAPACITY_BLOCK, T0, T0 + timedelta(hours=10), instances=2, fee_usd=700.0
    )
    window = Window(T0, T0 + timedelta(hours=10), 2)
    usage = fold([Sample(T0, 2), Sample(T0 + timedelta(hours=8), 0)], window)
    card = report_card(record.model_copy(update={"usage": usage}), 98.32)
    assert card is not None
    assert card.paid_usd == 700.0
    assert card.used_instance_hours == pytest.approx(16.0)
    assert card.utilisation_pct == pytest.approx(80.0)
    assert card.on_demand_usd == pytest.approx(round(16 * 98.32, 2))
    assert card.saved_usd == pytest.approx(round(16 * 98.32 - 700.0, 2))


def test_an_odcr_costs_its_billed_hours_at_the_on_demand_rate() -> None:
    record = record_with_reservation(
        OptionKind.ON_DEMAND_RESERVATION, T0, T0 + timedelta(hours=4), instances=1
    )
    usage = fold(
        [Sample(T0, 1), Sample(T0 + timedelta(hours=1), 0)], Window(T0, T0 + timedelta(hours=4), 1)
    )
    from tests.unit.test_comparison import OD, quote, req

    ended = record.model_copy(
        update={"usage": usage, "state": State.EXPIRED, "quote": quote(req())}
    )
    card = report_card(settle(ended, T0, "ended"), OD)
    assert card is not None
    # The ledger's paid figure: the 4 billed hours at the quote's On-Demand rate.
    paid, used = round(4 * OD, 2), round(OD, 2)
    assert (card.paid_usd, card.on_demand_usd, card.saved_usd) == (paid, used, used - paid)


def test_so_far_holds_the_last_count_to_now_without_a_new_sample() -> None:
    window = Window(T0, T0 + timedelta(hours=10), 2)
    usage = fold([Sample(T0, 2), Sample(T0 + timedelta(hours=1), 1)], window)
    now = T0 + timedelta(hours=4)
    held = so_far(usage, window, now)
    assert held == until_end(usage, Window(T0, now, 2))
    assert held is not None and held.used_instance_hours == pytest.approx(2 + 3)
    assert so_far(usage, window, T0 + timedelta(hours=30)) == until_end(usage, window)
    assert so_far(None, window, now) is None


class _Who:
    def __init__(self, user: str, is_approver: bool = False) -> None:
        self.user, self.is_approver = user, is_approver


def test_release_ends_an_odcr_now_and_starts_its_cleanup() -> None:
    end = T0 + timedelta(days=2)
    record = record_with_reservation(OptionKind.ON_DEMAND_RESERVATION, T0, end, instances=2)
    now = T0 + timedelta(hours=3)
    moved = released(record, _Who("U0APPROVER", is_approver=True), now)
    new = moved.record
    assert new.state is State.EXPIRED and new.reservation is not None
    assert new.reservation.end == now and new.cleanup is not None
    assert new.cleanup.status.value == "cleaning" and new.cleanup.next_at == now
    assert new.usage is not None and new.usage.billed_instance_hours == pytest.approx(6.0)
    with pytest.raises(TransitionRefused, match="Only the requester of R1 or an approver"):
        released(record, _Who("U0OUTSIDER"), now)
    with pytest.raises(TransitionRefused, match="nothing to release"):
        released(new, _Who(record.requester), now)
    block = record_with_reservation(OptionKind.CAPACITY_BLOCK, T0, end, instances=2)
    with pytest.raises(TransitionRefused, match="Capacity Block cannot be cancelled"):
        released(block, _Who(record.requester), now)


def test_an_odcr_reserved_ahead_is_not_released_before_its_commitment_ends() -> None:
    end = T0 + timedelta(days=2)
    record = record_with_reservation(OptionKind.ON_DEMAND_RESERVATION, T0, end, instances=2)
    attempt = PurchaseAttempt(
        at=T0 - timedelta(days=14),
        kind=OptionKind.ON_DEMAND_RESERVATION,
        offering_id=None,
        region="us-east-1",
        approved_usd=1.0,
        lease_until=T0,
        token="t",
        start_ahead=True,
    )
    ahead = record.model_copy(update={"attempts": (attempt,)})
    assert committed(ahead) and not committed(record)
    with pytest.raises(TransitionRefused, match="be cancelled before its commitment ends"):
        released(ahead, _Who(record.requester), T0 + timedelta(hours=3))


def test_a_sample_is_written_when_the_count_changes_or_an_idle_step_falls_due() -> None:
    end = T0 + timedelta(days=2)
    record = record_with_reservation(OptionKind.CAPACITY_BLOCK, T0, end, instances=2)
    alert, every = timedelta(hours=2), timedelta(hours=6)
    first = sampled(record, Sample(T0 + timedelta(minutes=5), 2), alert, every)
    assert first is not None and first.event == on.Sampled(alert=0, stretch="")
    busy = first.record
    assert sampled(busy, Sample(T0 + timedelta(minutes=10), 2), alert, every) is None
    idle = sampled(busy, Sample(T0 + timedelta(minutes=15), 0), alert, every)
    assert idle is not None and idle.record.usage is not None
    since = idle.record.usage.idle_since
    assert since == T0 + timedelta(minutes=15) and idle.event == on.Sampled(alert=0, stretch="")
    due = sampled(idle.record, Sample(since + alert, 0), alert, every)
    assert due is not None and due.record.usage is not None
    assert due.event == on.Sampled(alert=int(IdleStep.TELL), stretch=since.isoformat())
    # The step is decided with the write that records it: the same stretch, never twice.
    assert (
        sampled(due.record, Sample(since + alert + timedelta(minutes=5), 0), alert, every) is None
    )
    ended = due.record.model_copy(update={"state": State.EXPIRED})
    assert sampled(ended, Sample(since + alert, 0), alert, every) is None


def test_the_last_count_is_held_to_the_end_once_it_ended() -> None:
    end = T0 + timedelta(hours=10)
    record = record_with_reservation(OptionKind.CAPACITY_BLOCK, T0, end, instances=2)
    step = sampled(record, Sample(T0, 2), timedelta(hours=2), timedelta(hours=6))
    assert step is not None
    assert usage_closed(step.record) is None  # still active
    closed = usage_closed(step.record.model_copy(update={"state": State.EXPIRED}))
    assert closed is not None and closed.record.usage is not None
    assert closed.record.usage.used_instance_hours == pytest.approx(20.0)
    assert usage_closed(closed.record) is None  # nothing more to hold
