from __future__ import annotations

import itertools

import pytest

from bot.domain.lifecycle import TRANSITIONS, IllegalTransition, State, check_transition


def test_every_state_has_its_transitions() -> None:
    assert set(TRANSITIONS) == set(State)
    assert State.PURCHASE_UNKNOWN.label == "purchase unknown"


def test_the_design_lifecycle_is_allowed() -> None:
    path = [
        State.DRAFT,
        State.QUOTED,
        State.PENDING_APPROVAL,
        State.APPROVED,
        State.PURCHASING,
        State.PAYMENT_PENDING,
        State.SCHEDULED,
        State.ACTIVE,
        State.EXPIRING,
        State.EXPIRED,
        State.CLEANED_UP,
    ]
    for current, target in itertools.pairwise(path):
        check_transition(current, target)
    for end in (State.REJECTED, State.CANCELLED, State.TIMED_OUT):
        check_transition(State.PENDING_APPROVAL, end)
    check_transition(State.PURCHASING, State.FAILED)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (State.QUOTED, State.APPROVED),  # never approved without pending approval
        (State.PENDING_APPROVAL, State.PURCHASING),  # never bought without approval
        (State.REJECTED, State.APPROVED),
        (State.CANCELLED, State.PENDING_APPROVAL),
        (State.APPROVED, State.APPROVED),
    ],
)
def test_shortcuts_are_refused(current: State, target: State) -> None:
    with pytest.raises(
        IllegalTransition, match=f"cannot go from {current.label} to {target.label}"
    ):
        check_transition(current, target)


def test_a_purchase_of_unknown_outcome_is_decided_by_a_person_never_rebought() -> None:
    check_transition(State.PURCHASING, State.PURCHASE_UNKNOWN)
    for found in (State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.FAILED):
        check_transition(State.PURCHASE_UNKNOWN, found)
    with pytest.raises(IllegalTransition):
        check_transition(State.PURCHASE_UNKNOWN, State.PURCHASING)
    with pytest.raises(IllegalTransition):
        check_transition(State.PURCHASE_UNKNOWN, State.APPROVED)


def test_a_moved_offering_goes_back_to_quoted_for_a_new_approval() -> None:
    check_transition(State.APPROVED, State.QUOTED)
    check_transition(State.PURCHASING, State.QUOTED)
    # ...and from quoted, only through pending approval to purchasing again.
    with pytest.raises(IllegalTransition):
        check_transition(State.QUOTED, State.PURCHASING)


def test_nothing_returns_to_purchasing_once_bought() -> None:
    for state in State:
        if state is not State.APPROVED:
            assert State.PURCHASING not in TRANSITIONS[state] or state is State.PURCHASING
