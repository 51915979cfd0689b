"""Future-dated Capacity Reservations: CreateCapacityReservation with `StartDate`.

Rules, from the EC2 API reference, CreateCapacityReservation
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateCapacityReservation.html):
- StartDate: "You can request a future-dated Capacity Reservation between 5 and 120 days
  in advance"; CommitmentDuration and DeliveryPreference are "Required for future-dated
  Capacity Reservations only"; DeliveryPreference: "The only supported value is
  incremental".
- InstanceType: "future-dated Capacity Reservations for instance types in the C, M, R, I,
  T, and G instance families only".
- InstanceCount: "a minimum of 32 vCPUs".
- EndDate: "you can't specify an end date and time that is within the commitment duration".
- CapacityReservationCommitmentInfo: the reservation can't be cancelled before the
  commitment ends.
States (botocore's CapacityReservationState; EC2 User Guide, cr-concepts.html): AWS
assesses the request (`assessing`), then schedules it (`scheduled`, `active` from the
start date) or declines it (`unsupported`). The pages give no assessment time: the
sandbox takes `MarketConditions.future_assessment` (an hour unless told).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_invalid

FAMILIES = frozenset({"c", "m", "r", "i", "t", "g"})
EARLIEST = timedelta(days=5)
LATEST = timedelta(days=120)
MIN_VCPUS = 32
_TYPE = re.compile(r"([a-z]+)\d[a-z0-9-]*\.(\d*)x?large")


def _family_and_vcpus(instance_type: str) -> tuple[str, int | None]:
    """The family letters and the vCPUs of a size (DescribeInstanceTypes' DefaultVCpus
    for the sizes the sandbox sells: large 2, xlarge 4, Nxlarge 4N)."""
    match = _TYPE.fullmatch(instance_type.lower())
    if match is None:
        return instance_type.split(".", 1)[0].rstrip("0123456789"), None
    family, times = match.groups()
    size = instance_type.lower().rsplit(".", 1)[1]
    vcpus = 2 if size == "large" else 4 * int(times or 1)
    return family, vcpus


def check_future_dated(params: Mapping[str, Any], now: datetime) -> None:
    """Refuse a future-dated request as AWS documents it would be refused."""
    start = params["StartDate"]
    if params.get("CommitmentDuration") is None or params.get("DeliveryPreference") is None:
        raise SandboxError(
            "MissingParameter",
            "CommitmentDuration and DeliveryPreference are required with StartDate.",
        )
    if params["DeliveryPreference"] != "incremental":
        raise ec2_invalid("The only supported DeliveryPreference is incremental.")
    if not EARLIEST <= start - now <= LATEST:
        raise ec2_invalid(
            "You can request a future-dated Capacity Reservation between 5 and 120 days in advance."
        )
    instance_type = str(params["InstanceType"])
    family, vcpus = _family_and_vcpus(instance_type)
    if family not in FAMILIES:
        raise SandboxError(
            "Unsupported",
            f"Future-dated Capacity Reservations are not supported for {instance_type}: "
            "C, M, R, I, T and G instance families only.",
        )
    if vcpus is not None and vcpus * int(params["InstanceCount"]) < MIN_VCPUS:
        raise ec2_invalid(f"A future-dated Capacity Reservation needs at least {MIN_VCPUS} vCPUs.")
    end = params.get("EndDate")
    commitment = timedelta(seconds=int(params["CommitmentDuration"]))
    if end is not None and end < start + commitment:
        raise ec2_invalid("The end date can't be within the commitment duration.")


def future_state(record: Mapping[str, Any], now: datetime) -> str | None:
    """assessing, unsupported or scheduled before the start; None once it may be active."""
    if "start" not in record:
        return None
    if now < datetime.fromisoformat(record["assessed_at"]):
        return "assessing"
    if record.get("declined"):
        return "unsupported"
    if now < datetime.fromisoformat(record["start"]):
        return "scheduled"
    return None


def future_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """What DescribeCapacityReservations adds for a future-dated reservation."""
    if "start" not in record:
        return {}
    start = datetime.fromisoformat(record["start"])
    commitment = timedelta(seconds=int(record["commitment"]))
    return {
        "DeliveryPreference": "incremental",
        "CommitmentInfo": {
            "CommittedInstanceCount": record["count"],
            "CommitmentEndDate": start + commitment,
        },
    }


def refuse_cancel_in_commitment(record: Mapping[str, Any], now: datetime) -> None:
    """CapacityReservationCommitmentInfo: "You can't decrease the instance count or cancel
    the Capacity Reservation before this date and time" (the error code is not given in
    the pages checked; the sandbox answers InvalidCapacityReservationState)."""
    if "start" not in record or record.get("declined"):
        return
    ends = datetime.fromisoformat(record["start"]) + timedelta(seconds=int(record["commitment"]))
    if now < ends:
        raise SandboxError(
            "InvalidCapacityReservationState",
            f"The Capacity Reservation is committed until {ends.isoformat()} and cannot be "
            "cancelled before then.",
        )
