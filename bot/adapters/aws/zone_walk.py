"""Asking for an On-Demand Capacity Reservation: in each zone that sells the type, in
turn, until one has room; ahead of its window (future-dated) where AWS allows that."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from botocore.exceptions import ClientError

from bot.services.ports import Order, PurchaseError, PurchaseProblem

log = logging.getLogger(__name__)


def reserve_in_a_zone(
    create: Callable[[str], dict[str, Any]],
    order: Order,
    zones: Sequence[str],
    no_capacity: Collection[str],
) -> dict[str, Any]:
    """`create(zone)` for each zone until one answers with a reservation.

    InsufficientInstanceCapacity is a 5xx that botocore retries; the re-sends carry the
    zone's ClientToken, which returns the reservation if an earlier send made it. So that
    answer, even to a re-send, means nothing was made in that zone, and the next zone
    (with its own token) is a new request, never a second reservation."""
    refused: list[str] = []
    for zone in zones:
        try:
            return create(zone)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) not in no_capacity:
                raise
            log.info("no capacity for %s in %s: trying the next zone", order.token, zone)
            refused.append(zone)
    raise PurchaseError(
        PurchaseProblem.INSUFFICIENT_CAPACITY,
        "InsufficientInstanceCapacity",
        f"no Availability Zone of {order.region} had capacity for {order.count}x "
        f"{order.instance_type} (tried {', '.join(refused)}); nothing was reserved",
    )


def future_dated(order: Order) -> dict[str, Any]:
    """A future-dated Capacity Reservation: held from the window's start, committed for
    the whole window (the end cannot fall inside the commitment), delivered on top of
    what the account runs (`incremental`, the only value AWS takes)."""
    if not order.start_ahead:
        return {}
    return {
        "StartDate": order.start,
        "CommitmentDuration": int((order.end - order.start).total_seconds()),
        "DeliveryPreference": "incremental",
    }
