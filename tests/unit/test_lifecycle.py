from __future__ import annotations

import itertools

import pytest

from bot.domain.lifecycle import TRANSITIONS, IllegalTransition, State, check_transition


def test_every_state_has_its_transitions() -> None:
    assert set(TRANSITIONS) == set(State)


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
    with pytest.raises(IllegalTransition):
        check_transition(current, target)
