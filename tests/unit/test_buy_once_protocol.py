"""The buy-once protocol purchases and extensions share: a live lease waits, a lapsed one
reconciles (never buys), an unknown outcome is looked at again for two hours at growing
intervals, then left to a person."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.domain.buy_once import (
    ATTEMPT_LEASE,
    RECONCILE_FOR,
    Stage,
    Step,
    lease,
    look_again_at,
    next_step,
)

NOW = datetime(2026, 12, 14, 9, tzinfo=UTC)
MIN = timedelta(minutes=1)


def test_each_stage_has_one_next_step() -> None:
    assert next_step(Stage.APPROVED, None, NOW).step is Step.CLAIM
    held = next_step(Stage.BUYING, NOW + MIN, NOW)
    assert (held.step, held.until) == (Step.WAIT, NOW + MIN)
    assert next_step(Stage.BUYING, NOW, NOW).step is Step.RECONCILE  # ran out this instant
    assert next_step(Stage.BUYING, None, NOW).step is Step.RECONCILE
    assert next_step(Stage.UNKNOWN, NOW + MIN, NOW).step is Step.LOOK_AGAIN
    assert next_step(Stage.SETTLED, NOW + MIN, NOW).step is Step.NOTHING


def test_an_attempt_is_its_workers_for_the_lease() -> None:
    assert lease(NOW) - NOW == ATTEMPT_LEASE
    assert next_step(Stage.BUYING, lease(NOW), NOW + ATTEMPT_LEASE - MIN).step is Step.WAIT
    assert next_step(Stage.BUYING, lease(NOW), NOW + ATTEMPT_LEASE).step is Step.RECONCILE


def test_an_unknown_outcome_is_looked_at_ever_less_often_then_left_to_a_person() -> None:
    attempted, now, waits = NOW, NOW, []
    while (again := look_again_at(attempted, now)) is not None:
        waits.append(again - now)
        now = again
    assert waits[0] == MIN and max(waits) == timedelta(minutes=20)
    assert waits == sorted(waits)
    assert RECONCILE_FOR <= now - attempted < RECONCILE_FOR + timedelta(minutes=20)
    assert look_again_at(attempted, attempted + RECONCILE_FOR) is None
