"""A request that asks again for what the same person already asked for: the same
instance type over an overlapping window, still waiting for approvers or bought. Said
before Submit, so that one need is not bought twice by mistake."""

from __future__ import annotations

from collections.abc import Iterable

from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord

# Asked for and not over: waiting for approvers, being bought, or bought and not ended.
STILL_WANTED = frozenset(
    {
        State.PENDING_APPROVAL,
        State.APPROVED,
        State.PURCHASING,
        State.PAYMENT_PENDING,
        State.PURCHASE_UNKNOWN,
        State.SCHEDULED,
        State.ACTIVE,
    }
)


def asked_already(record: CapacityRecord, others: Iterable[CapacityRecord]) -> list[CapacityRecord]:
    """The requester's other requests for the same type whose windows overlap this one's."""
    start, end = record.window
    return [
        o
        for o in others
        if o.id != record.id
        and o.requester == record.requester
        and o.state in STILL_WANTED
        and o.request.instance_type == record.request.instance_type
        and o.window[0] < end
        and start < o.window[1]
    ]
