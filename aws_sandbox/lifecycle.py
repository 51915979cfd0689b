"""Where a purchase stands, computed from the clock: moving the clock moves the lifecycle."""

from __future__ import annotations

from datetime import datetime
from enum import Enum


class Phase(Enum):
    PAYMENT_PENDING = "payment-pending"
    PAYMENT_FAILED = "payment-failed"
    SCHEDULED = "scheduled"
    ACTIVE = "active"
    EXPIRED = "expired"


def phase(
    now: datetime,
    payment_clears_at: datetime,
    payment_fails: bool,
    start: datetime,
    end: datetime,
) -> Phase:
    # Payment settles first: a block bought minutes before its start waits for it.
    if now < payment_clears_at:
        return Phase.PAYMENT_PENDING
    if payment_fails:
        return Phase.PAYMENT_FAILED
    if now < start:
        return Phase.SCHEDULED
    if now < end:
        return Phase.ACTIVE
    return Phase.EXPIRED
