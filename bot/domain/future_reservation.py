"""What an On-Demand Capacity Reservation holds, and when AWS would hold it ahead.

The bot creates an ODCR for immediate use 10 minutes before the window opens: until then
nothing is held, and at creation AWS may refuse it for lack of capacity in every zone.
That is said wherever an ODCR is recommended (`AT_WINDOW`).

AWS can also hold capacity ahead with a future-dated Capacity Reservation
(CreateCapacityReservation with `StartDate`, `CommitmentDuration`, `DeliveryPreference`),
which it assesses first (`assessing`) and then schedules (`scheduled`, active at the start
date) or declines (`unsupported`). Its rules, from the EC2 API reference and user guide:
- https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateCapacityReservation.html
  StartDate: "between 5 and 120 days in advance"; InstanceType: "instance types in the C,
  M, R, I, T, and G instance families only"; InstanceCount: "a minimum of 32 vCPUs";
  DeliveryPreference: "The only supported value is incremental"; CommitmentDuration: the
  reservation cannot be cancelled or reduced before it ends.
- https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-concepts.html (start date,
  commitment duration) and capacity-reservations-create.html (a request may fail when
  EC2 does not have sufficient capacity).
- States assessing, scheduled, unsupported: botocore's CapacityReservationState (1.44).
So no P or Trn type qualifies; some G types do, given enough instances and lead time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

AT_WINDOW = (
    "an On-Demand Capacity Reservation is made only when the window opens (10 minutes "
    "before it): nothing is held until then, and AWS may refuse it then for lack of capacity"
)
AT_WINDOW_SHORT = "reserved only when the window opens, may fail"
AHEAD = (
    "an On-Demand Capacity Reservation for this type is asked ahead, at approval, as a "
    "future-dated Capacity Reservation: AWS assesses it first and may decline it (you are "
    "told; nothing is held or billed then); once AWS schedules it, the capacity is held "
    "from the window's start, and it cannot be cancelled before the window ends"
)
AHEAD_SHORT = "held from the start once AWS accepts it"
DECLINED = (
    "AWS declined to reserve the capacity ahead: its future-dated Capacity Reservation came "
    "back unsupported, so nothing is held and nothing is billed. Ask again for another option"
)

# C, M, R, I, T and G families (API reference, InstanceType): the letters before the
# generation, whole, so trn2 (Trn) and inf2 (Inf) are not T or I.
FAMILIES = frozenset({"c", "m", "r", "i", "t", "g"})
EARLIEST = timedelta(days=5)
LATEST = timedelta(days=120)
MIN_VCPUS = 32
DELIVERY = "incremental"
PENDING_STATES = frozenset({"assessing", "scheduled"})
DECLINED_STATE = "unsupported"

_FAMILY = re.compile(r"([a-z]+)\d")


def family_letter(instance_type: str) -> str:
    """The family's letters: `g` for g6e.12xlarge, `p` for p5.48xlarge, `trn` for
    trn2.48xlarge."""
    match = _FAMILY.match(instance_type.lower())
    return match.group(1) if match else ""


def reserves_ahead(
    instance_type: str, vcpus: int | None, count: int, start: datetime, now: datetime
) -> bool:
    """Whether the bot asks for this ODCR ahead (future-dated) rather than at the window."""
    return future_dated_refusal(instance_type, vcpus, count, start, now) is None


def future_dated_refusal(
    instance_type: str, vcpus: int | None, count: int, start: datetime, now: datetime
) -> str | None:
    """Why AWS would not take a future-dated Capacity Reservation for this request (None:
    it may; AWS still assesses it and can decline)."""
    family = family_letter(instance_type)
    if family not in FAMILIES:
        return (
            f"{instance_type} is not in a family AWS reserves ahead (C, M, R, I, T and G "
            "families only)"
        )
    ahead = start - now
    if ahead < EARLIEST or ahead > LATEST:
        return (
            f"the window starts {ahead.days} days ahead; AWS reserves ahead only 5 to 120 "
            "days before the start"
        )
    if vcpus is None:
        return f"the vCPUs of {instance_type} are not known"
    if vcpus * count < MIN_VCPUS:
        return (
            f"{count}x {instance_type} is {vcpus * count} vCPUs; AWS reserves ahead at least "
            f"{MIN_VCPUS}"
        )
    return None


COMMITTED = (
    "it was reserved ahead with a commitment for its whole window, and AWS does not let a "
    "future-dated Capacity Reservation be cancelled before its commitment ends"
)
