"""Buying once: the one protocol for a purchase and for an extension of one.

1. A job claims the approved purchase by compare-and-set and records its attempt with a
   lease (`ATTEMPT_LEASE`, as long as the worker's job lease) before any AWS call;
   exactly one claimer wins.
2. It looks before it buys: what AWS already holds for the request is not bought again
   (an attempt record can be lost with Redis's last second of writes).
3. An answer that leaves the outcome uncertain (a timeout, a reset, a 5xx) is never
   followed by another purchase call: the outcome is unknown and AWS is looked at again,
   at growing intervals, for `RECONCILE_FOR`; then a person decides.
4. The attempt is marked sent just before the purchase call. A job that finds an
   attempt still leased waits for the lease; one that finds it run out (its worker died
   mid-call) reconciles, never buys, unless the attempt was surely never sent (the store
   failed, or the worker died, before the call): then a new attempt is claimed as in 1.

`next_step` says which of these a job is at; `look_again_at` when an unknown outcome is
looked at next. The services apply them to a request's attempt or its extension's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

ATTEMPT_LEASE = timedelta(minutes=5)
RECONCILE_FOR = timedelta(hours=2)
RECONCILE_FIRST = timedelta(minutes=1)
RECONCILE_MAX = timedelta(minutes=20)


class Stage(StrEnum):
    """Where a purchase (or an extension) is."""

    APPROVED = "approved"  # nothing tried yet
    BUYING = "buying"  # an attempt is recorded
    UNKNOWN = "unknown"  # an attempt's outcome is not known
    SETTLED = "settled"  # bought, failed or refused: nothing more to do


class Step(StrEnum):
    CLAIM = "claim"  # win the attempt, look, then buy
    WAIT = "wait"  # another worker holds the attempt's lease
    RECONCILE = "reconcile"  # the attempt outlived its lease: look in AWS, never buy
    LOOK_AGAIN = "look again"  # an unknown outcome: look in AWS, never buy
    NOTHING = "nothing"


@dataclass(frozen=True)
class NextStep:
    step: Step
    until: datetime | None = None  # WAIT: when the lease runs out


def next_step(stage: Stage, lease_until: datetime | None, now: datetime) -> NextStep:
    """What a job that finds the purchase at `stage` does now."""
    if stage is Stage.APPROVED:
        return NextStep(Step.CLAIM)
    if stage is Stage.BUYING:
        if lease_until is not None and lease_until > now:
            return NextStep(Step.WAIT, lease_until)
        return NextStep(Step.RECONCILE)
    if stage is Stage.UNKNOWN:
        return NextStep(Step.LOOK_AGAIN)
    return NextStep(Step.NOTHING)


def lease(now: datetime) -> datetime:
    """Until when an attempt made now is its worker's."""
    return now + ATTEMPT_LEASE


def look_again_at(attempted_at: datetime, now: datetime) -> datetime | None:
    """When an unknown outcome of an attempt made at `attempted_at` is looked at next:
    after as long again as it has been (at least a minute, at most 20), for two hours;
    None after that: a person decides."""
    age = now - attempted_at
    if age >= RECONCILE_FOR:
        return None
    return now + min(max(age, RECONCILE_FIRST), RECONCILE_MAX)


def first_look(now: datetime) -> datetime:
    """When an outcome just found unknown is looked at first."""
    return now + RECONCILE_FIRST
