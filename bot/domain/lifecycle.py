"""Request states and the transitions between them (see DESIGN.md, "Request lifecycle").

The store applies each transition as a compare-and-set from the expected state; this
module says which transitions exist at all.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    DRAFT = "draft"
    QUOTED = "quoted"
    PENDING_APPROVAL = "pending_approval"
    APPROVED = "approved"
    PURCHASING = "purchasing"
    PAYMENT_PENDING = "payment_pending"
    SCHEDULED = "scheduled"
    ACTIVE = "active"
    EXPIRING = "expiring"
    EXPIRED = "expired"
    CLEANED_UP = "cleaned_up"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    FAILED = "failed"
    # The outcome of a purchase call is not known and AWS shows nothing with the request's
    # tag or plan name: a person decides (check again, or mark failed). Never re-bought.
    PURCHASE_UNKNOWN = "purchase_unknown"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")

    @property
    def final(self) -> bool:
        return not TRANSITIONS[self]


TRANSITIONS: dict[State, frozenset[State]] = {
    State.DRAFT: frozenset({State.QUOTED, State.CANCELLED, State.FAILED}),
    State.QUOTED: frozenset({State.PENDING_APPROVAL, State.CANCELLED}),
    # pending -> pending records a first approval when two are needed.
    State.PENDING_APPROVAL: frozenset(
        {
            State.PENDING_APPROVAL,
            State.APPROVED,
            State.REJECTED,
            State.CANCELLED,
            State.TIMED_OUT,
        }
    ),
    # approved -> quoted: the offering moved before the purchase job ran; a new approval.
    # approved -> scheduled: On-Demand and Spot, nothing to buy.
    State.APPROVED: frozenset({State.PURCHASING, State.QUOTED, State.SCHEDULED}),
    # purchasing -> quoted: the fee rose, the offering went, or AWS refused in a way a new
    # attempt can fix; the requester submits again and approvers decide again.
    # purchasing -> active/expired: found by reconciling after a crash, already under way.
    State.PURCHASING: frozenset(
        {
            State.PAYMENT_PENDING,
            State.SCHEDULED,
            State.ACTIVE,
            State.EXPIRED,
            State.FAILED,
            State.QUOTED,
            State.PURCHASE_UNKNOWN,
        }
    ),
    State.PURCHASE_UNKNOWN: frozenset(
        {State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.EXPIRED, State.FAILED}
    ),
    # A poll can miss a short state entirely (a block bought for now is active at once).
    State.PAYMENT_PENDING: frozenset({State.SCHEDULED, State.ACTIVE, State.EXPIRED, State.FAILED}),
    # scheduled -> cancelled: On-Demand or Spot before its window opens (nothing bought).
    State.SCHEDULED: frozenset({State.ACTIVE, State.EXPIRED, State.FAILED, State.CANCELLED}),
    State.ACTIVE: frozenset({State.EXPIRING, State.EXPIRED}),
    State.EXPIRING: frozenset({State.EXPIRED}),
    State.EXPIRED: frozenset({State.CLEANED_UP}),
    State.CLEANED_UP: frozenset(),
    State.REJECTED: frozenset(),
    State.CANCELLED: frozenset(),
    State.TIMED_OUT: frozenset(),
    State.FAILED: frozenset(),
}

# States in which a request still waits on people, and can be cancelled by its requester.
CANCELLABLE = frozenset({State.DRAFT, State.QUOTED, State.PENDING_APPROVAL})
# Chosen kinds for which nothing is bought: cancellable while scheduled, before the window.
NOTHING_BOUGHT = frozenset({"on-demand", "spot"})

# States in which AWS holds (or may hold) something bought for the request: tracked by polls.
TRACKED = frozenset(
    {State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.EXPIRING, State.PURCHASE_UNKNOWN}
)


class IllegalTransition(ValueError):
    def __init__(self, current: State, target: State) -> None:
        self.current = current
        self.target = target
        super().__init__(f"cannot go from {current.label} to {target.label}")


def check_transition(current: State, target: State) -> None:
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current, target)
