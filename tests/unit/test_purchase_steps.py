"""Buying's steps as pure functions: the record AWS's answer makes, the event it was, and
None once someone else moved the record. Every step's move is one the lifecycle allows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.domain import events as on
from bot.domain import purchase_steps as steps
from bot.domain.buy_once import ATTEMPT_LEASE
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State, check_transition
from bot.domain.purchase import plan_name
from bot.domain.records import CapacityRecord, Choice, Reservation
from bot.domain.transitions import Transition
from tests.factories import NOW, make_record


def approved(kind: OptionKind = OptionKind.CAPACITY_BLOCK, **kw: object) -> CapacityRecord:
    choice = Choice(kind=kind, offering_id="cb-1", total_usd=4983.55)
    return make_record(state=State.APPROVED, choice=choice, **kw)


def started(kind: OptionKind = OptionKind.CAPACITY_BLOCK) -> CapacityRecord:
    step = steps.attempt_started(approved(kind), State.APPROVED, 0, "gpu", "default", NOW)
    assert step is not None
    return step.record


def reservation(state: str, kind: OptionKind = OptionKind.CAPACITY_BLOCK) -> Reservation:
    return Reservation(
        kind=kind,
        id="cr-1",
        region="us-east-1",
        instance_type="p5.48xlarge",
        instances=2,
        start=NOW + timedelta(days=14),
        end=NOW + timedelta(days=17),
        fee_usd=4983.55,
        state=state,
        state_reason="card declined" if state == "payment-failed" else "",
    )


def allowed(before: CapacityRecord, step: Transition | None) -> Transition:
    assert step is not None
    if step.record.state is not before.state:
        check_transition(before.state, step.record.state)
    return step


def test_an_attempt_is_recorded_with_its_lease_token_and_account_before_any_call() -> None:
    record = approved(OptionKind.TRAINING_PLAN)
    step = allowed(record, steps.attempt_started(record, State.APPROVED, 0, "gpu", "default", NOW))
    (attempt,) = step.record.attempts
    assert step.record.state is State.PURCHASING and isinstance(step.event, on.PurchaseStarted)
    assert attempt.lease_until == NOW + ATTEMPT_LEASE and attempt.approved_usd == 4983.55
    assert attempt.account == "default" and attempt.offering_id == "cb-1"
    assert attempt.token == plan_name("gpu", "R1", 1)  # one name per attempt


def test_a_second_worker_that_saw_the_record_before_the_first_won_does_not_start() -> None:
    assert steps.attempt_started(started(), State.APPROVED, 0, "gpu", "default", NOW) is None


@pytest.mark.parametrize(
    ("aws_state", "state"),
    [
        ("payment-pending", State.PAYMENT_PENDING),
        ("scheduled", State.SCHEDULED),
        ("active", State.ACTIVE),
        ("payment-failed", State.FAILED),
    ],
)
def test_what_was_bought_moves_the_request_to_the_state_aws_reports(
    aws_state: str, state: State
) -> None:
    record = started()
    step = allowed(record, steps.bought(record, reservation(aws_state), NOW))
    assert step.record.state is state and step.record.reservation is not None
    assert isinstance(step.event, on.Bought)
    assert (step.record.failure == "card declined") is (state is State.FAILED)


def test_a_purchase_found_after_an_unknown_outcome_is_recorded_as_bought() -> None:
    unknown = steps.outcome_unknown(started(), started().attempts[-1], NOW)
    assert unknown is not None and unknown.record.state is State.PURCHASE_UNKNOWN
    assert "never buys it again" in (unknown.record.failure or "")
    step = allowed(unknown.record, steps.bought(unknown.record, reservation("active"), NOW))
    assert step.record.state is State.ACTIVE


def test_nothing_is_recorded_over_a_request_that_left_buying() -> None:
    for state in (State.APPROVED, State.FAILED, State.ACTIVE, State.QUOTED):
        record = started().model_copy(update={"state": state})
        assert steps.bought(record, reservation("active"), NOW) is None


def test_a_refused_attempt_is_marked_once_and_not_after_a_new_one_began() -> None:
    record = started()
    attempt = record.attempts[-1]
    step = allowed(record, steps.attempt_refused(record, attempt, "throttled"))
    assert step.record.attempts[-1].refused == "throttled" and step.record.state is State.PURCHASING
    later = NOW + timedelta(minutes=1)
    newer = steps.attempt_started(step.record, State.PURCHASING, 1, "gpu", "default", later)
    assert newer is not None
    assert steps.attempt_refused(newer.record, attempt, "throttled") is None


def test_an_attempt_marked_sent_is_never_tried_anew_and_one_never_sent_is() -> None:
    record = started()
    attempt = record.attempts[-1]
    assert attempt.never_sent
    later = NOW + ATTEMPT_LEASE + timedelta(minutes=1)
    # Never sent (the store failed before the call): a new attempt is safe.
    again = steps.attempt_started(record, State.PURCHASING, 1, "gpu", "default", later)
    assert again is not None and len(again.record.attempts) == 2
    # Marked sent (with the offering id AWS renumbered it to): reconciled, never again.
    step = allowed(record, steps.attempt_sent(record, attempt, "cb-2", NOW))
    assert isinstance(step.event, on.PurchaseSent) and step.record.state is State.PURCHASING
    sent = step.record.attempts[-1]
    assert sent.sent_at == NOW and sent.offering_id == "cb-2" and not sent.never_sent
    assert steps.attempt_started(step.record, State.PURCHASING, 1, "gpu", "default", later) is None


def test_an_attempt_recorded_before_sends_were_marked_counts_as_maybe_sent() -> None:
    record = started()
    old = record.attempts[-1].model_copy(update={"marks_sending": False})
    record = record.model_copy(update={"attempts": (old,)})
    assert not old.never_sent
    later = NOW + ATTEMPT_LEASE + timedelta(minutes=1)
    assert steps.attempt_started(record, State.PURCHASING, 1, "gpu", "default", later) is None


def test_a_call_is_not_marked_sent_once_a_newer_attempt_began() -> None:
    record = started()
    attempt = record.attempts[-1]
    later = NOW + ATTEMPT_LEASE + timedelta(minutes=1)
    newer = steps.attempt_started(record, State.PURCHASING, 1, "gpu", "default", later)
    assert newer is not None
    assert steps.attempt_sent(newer.record, attempt, "cb-1", later) is None
    gone = record.model_copy(update={"state": State.QUOTED})
    assert steps.attempt_sent(gone, attempt, "cb-1", later) is None


def test_a_requote_drops_the_approvals_and_says_nothing_was_bought() -> None:
    record = started()
    step = allowed(record, steps.requoted(record, None, "the offering is gone", NOW))
    assert step.record.state is State.QUOTED and step.record.approvals == ()
    assert step.record.failure == "Nothing was bought: the offering is gone."
    assert steps.requoted(make_record(state=State.ACTIVE), None, "x", NOW) is None


def test_a_failure_is_final_and_never_overwrites_another_end() -> None:
    step = allowed(started(), steps.purchase_failed(started(), "AccessDenied", NOW))
    assert step.record.state is State.FAILED and step.record.failure == "AccessDenied"
    assert steps.purchase_failed(step.record, "again", NOW) is None


def test_only_an_unknown_purchase_can_be_marked_failed() -> None:
    unknown = steps.outcome_unknown(started(), started().attempts[-1], NOW)
    assert unknown is not None
    step = allowed(unknown.record, steps.marked_failed(unknown.record, NOW))
    assert step.record.state is State.FAILED and step.record.failure == steps.MARKED_FAILED
    assert steps.marked_failed(started(), NOW) is None


def test_on_demand_waits_for_its_window_then_moves_with_it() -> None:
    record = approved(OptionKind.ON_DEMAND)
    step = allowed(record, steps.window_scheduled(record, NOW))
    assert step.record.state is State.SCHEDULED
    active = allowed(
        step.record, steps.window_moved_on(step.record, State.SCHEDULED, State.ACTIVE, NOW)
    )
    assert active.record.state is State.ACTIVE
    assert steps.window_moved_on(active.record, State.SCHEDULED, State.ACTIVE, NOW) is None


def test_tracking_applies_what_aws_says_only_to_the_version_it_read() -> None:
    record = started()
    bought = steps.bought(record, reservation("scheduled"), NOW)
    assert bought is not None
    fresh = reservation("active")
    seen = bought.record.version
    step = allowed(bought.record, steps.tracked(bought.record, seen, fresh, State.ACTIVE, NOW))
    assert step.record.state is State.ACTIVE and step.event == on.Tracked(moved_on=True)
    stale = bought.record.model_copy(update={"version": seen + 1})
    assert steps.tracked(stale, seen, fresh, State.ACTIVE, NOW) is None
