"""On-Demand Capacity Reservations: CreateCapacityReservation (idempotent by ClientToken),
CancelCapacityReservation and DescribeAvailabilityZones. They are listed by
DescribeCapacityReservations beside the Capacity Blocks' reservations (see
capacity_blocks.py).

EC2 User Guide, "On-Demand Capacity Reservations": a reservation is made in one
Availability Zone that sells the type; `InstanceMatchCriteria` open (the default) lets any
matching instance run in it, targeted only instances that name it; it bills from creation
until it ends or is cancelled.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_dry_run, ec2_invalid
from aws_sandbox.filters import Documented, ec2_filter
from aws_sandbox.future_reservations import (
    check_future_dated,
    future_fields,
    future_state,
    refuse_cancel_in_commitment,
)
from aws_sandbox.instances import instances_in
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import MarketStore, Record
from aws_sandbox.world import zones_selling
from aws_sandbox.zones import LOCAL_ZONES, zone_id

KIND = "capacity-reservation"
CANCELLED = "capacity-reservation-cancelled"  # reservation id -> when (records never change)


class CapacityReservations:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    def create(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        zone = str(params.get("AvailabilityZone", ""))
        local = [name for name, _ in LOCAL_ZONES.get(region, ())]
        if zone not in self._m.zones_in(region) and zone not in local:
            raise ec2_invalid(f"Invalid availability zone: [{zone}]")
        instance_type = str(params["InstanceType"])
        spec = self._m.world.spec(instance_type)
        selling = zones_selling(spec, self._m.zones_in(region)) if spec else ()
        if zone not in selling:
            raise SandboxError(
                "Unsupported",
                f"Your requested instance type ({instance_type}) is not supported in your "
                f"requested Availability Zone ({zone})."
                + (
                    f" Please retry your request by choosing {', '.join(selling)}."
                    if selling
                    else ""
                ),
            )
        if params.get("DryRun"):
            raise ec2_dry_run()
        now = self._m.clock.now()
        end = params.get("EndDate")
        if params.get("EndDateType") == "limited" and (end is None or end <= now):
            raise ec2_invalid("EndDate must be in the future when EndDateType is limited.")
        start = params.get("StartDate")
        if start is not None:
            check_future_dated(params, now)
        token = str(params.get("ClientToken") or uuid.uuid4().hex)
        fingerprint = _fingerprint(params)
        existing = self._m.store.get(KIND, _key(region, token))
        if existing is not None:
            if existing["fingerprint"] != fingerprint:
                raise SandboxError(
                    "IdempotentParameterMismatch",
                    "The client token you have provided is associated with a resource that "
                    "has different parameters.",
                )
            return {"CapacityReservation": render(existing, self._m.account_id, now)}
        # Capacity is per zone: one zone can be out of a type while another has room.
        # InsufficientInstanceCapacity is a server error (HTTP 500) in EC2's error codes,
        # https://docs.aws.amazon.com/ec2/latest/devguide/errors-overview.html, so SDKs
        # retry it; a retry carries the same ClientToken and is answered the same way.
        # A future-dated request is assessed later instead (future_reservations.py).
        if (
            start is None
            and not self._m.conditions.available(
                instance_type, now, end or now, int(params["InstanceCount"])
            )
        ) or not self._m.conditions.zone_has_capacity(zone, instance_type):
            raise SandboxError(
                "InsufficientInstanceCapacity",
                "There is not enough capacity to fulfill your request.",
                500,
            )
        tags = [
            {"Key": t["Key"], "Value": t.get("Value", "")}
            for spec in params.get("TagSpecifications", [])
            for t in spec.get("Tags", [])
        ]
        record: Record = {
            "capacity_reservation_id": f"cr-{uuid.uuid4().hex[:17]}",
            "region": region,
            "zone": zone,
            "instance_type": params["InstanceType"],
            "platform": params["InstancePlatform"],
            "count": params["InstanceCount"],
            "created": now.isoformat(),
            "end": end.isoformat() if end else None,
            "tags": tags,
            "fingerprint": fingerprint,
            "criteria": params.get("InstanceMatchCriteria") or "open",
        }
        if start is not None:
            record |= {
                "start": start.isoformat(),
                "commitment": int(params["CommitmentDuration"]),
                "assessed_at": (now + self._m.conditions.future_assessment).isoformat(),
                "declined": self._m.conditions.future_reservations_declined
                or not self._m.conditions.zone_has_capacity(zone, instance_type),
            }
        self._m.stamp(record, "CreateCapacityReservation", now)
        if not self._m.store.add(KIND, _key(region, token), record):
            record = self._m.store.get(KIND, _key(region, token)) or record
        return {"CapacityReservation": render(record, self._m.account_id, now)}

    def cancel(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        reservation_id = str(params.get("CapacityReservationId", ""))
        found = [
            r for r in self.in_region(region) if r["capacity_reservation_id"] == reservation_id
        ]
        if not found:
            raise SandboxError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{reservation_id}' does not exist",
            )
        refuse_cancel_in_commitment(found[0], self._m.clock.now())
        if params.get("DryRun"):
            raise ec2_dry_run()
        # Cancelling again, or an expired one, changes nothing (the first moment is kept).
        self._m.store.add(CANCELLED, reservation_id, {"at": self._m.clock.now().isoformat()})
        return {"Return": True}

    def describe_zones(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """The region's zones by name, Local Zones among them: those the account opted
        into, or all of them with AllAvailabilityZones (EC2 API reference)."""
        zones = [
            _zone(zone, region, "availability-zone", "opt-in-not-required")
            for zone in self._m.zones_in(region)
        ]
        for name, opt_in in LOCAL_ZONES.get(region, ()):
            if opt_in == "opted-in" or params.get("AllAvailabilityZones"):
                zones.append(_zone(name, region, "local-zone", opt_in))
        if names := params.get("ZoneNames"):
            zones = [z for z in zones if z["ZoneName"] in names]
        keep = ec2_filter(params.get("Filters", []), _ZONE_FILTERS)
        if params.get("DryRun"):
            raise ec2_dry_run()
        return {
            "AvailabilityZones": sorted((z for z in zones if keep(z)), key=lambda z: z["ZoneName"])
        }

    def in_region(self, region: str) -> list[Record]:
        return [r for r in self._m.store.records(KIND) if r["region"] == region]


def _zone(name: str, region: str, kind: str, opt_in: str) -> dict[str, Any]:
    zone: dict[str, Any] = {
        "ZoneName": name,
        "ZoneId": zone_id(name),
        "State": "available",
        "RegionName": region,
        "ZoneType": kind,
        "OptInStatus": opt_in,
        "GroupName": region if kind == "availability-zone" else name[:-1],
    }
    if kind != "availability-zone":
        zone["ParentZoneName"] = f"{region}a"
    return zone


# The page lists no tag filter.
_ZONE_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html",
    fields={
        "zone-name": lambda z: [z["ZoneName"]],
        "zone-id": lambda z: [z["ZoneId"]],
        "zone-type": lambda z: [z["ZoneType"]],
        "state": lambda z: [z["State"]],
        "region-name": lambda z: [z["RegionName"]],
        "opt-in-status": lambda z: [z["OptInStatus"]],
        "group-name": lambda z: [z["GroupName"]],
    },
    unmodelled=frozenset({"group-long-name", "message", "parent-zone-id", "parent-zone-name"}),
)


def render_stored(
    store: MarketStore, record: Record, account: str, now: datetime
) -> dict[str, Any]:
    """`render`, with the cancellation the store holds for it, if any, and the instances
    running in it."""
    cancelled = store.get(CANCELLED, record["capacity_reservation_id"])
    at = datetime.fromisoformat(cancelled["at"]) if cancelled else None
    used = instances_in(store, record["capacity_reservation_id"], now)
    return render(record, account, now, cancelled_at=at, used=used)


def render(
    record: Record,
    account: str,
    now: datetime,
    cancelled_at: datetime | None = None,
    used: int = 0,
) -> dict[str, Any]:
    end = datetime.fromisoformat(record["end"]) if record["end"] else None
    state = "expired" if end is not None and now >= end else "active"
    if cancelled_at is not None and now >= cancelled_at and state == "active":
        state = "cancelled"
    state = future_state(record, now) or state
    region, reservation_id = record["region"], record["capacity_reservation_id"]
    reservation: dict[str, Any] = {
        "CapacityReservationId": reservation_id,
        "OwnerId": account,
        "CapacityReservationArn": (
            f"arn:aws:ec2:{region}:{account}:capacity-reservation/{reservation_id}"
        ),
        "AvailabilityZoneId": zone_id(record["zone"]),
        "InstanceType": record["instance_type"],
        "InstancePlatform": record["platform"],
        "AvailabilityZone": record["zone"],
        "Tenancy": "default",
        "TotalInstanceCount": record["count"],
        "AvailableInstanceCount": max(record["count"] - used, 0) if state == "active" else 0,
        "EbsOptimized": False,
        "EphemeralStorage": False,
        "State": state,
        "StartDate": datetime.fromisoformat(record.get("start") or record["created"]),
        "EndDateType": "limited" if end else "unlimited",
        "InstanceMatchCriteria": record.get("criteria", "open"),
        "CreateDate": datetime.fromisoformat(record["created"]),
        "Tags": record["tags"],
        "ReservationType": "default",
    }
    if end is not None:
        reservation["EndDate"] = end
    return reservation | future_fields(record)


def _fingerprint(params: Mapping[str, Any]) -> str:
    fields = (
        "InstanceType",
        "InstancePlatform",
        "AvailabilityZone",
        "InstanceCount",
        "EndDate",
        "StartDate",
    )
    text = "|".join(str(params.get(f)) for f in fields)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key(region: str, token: str) -> str:
    return f"{region}/{token}"
