"""EC2 Capacity Blocks bought: PurchaseCapacityBlock, DescribeCapacityBlocks and
DescribeCapacityReservations, with states that follow the clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from aws_sandbox.capacity_reservations import KIND as RESERVATION_KIND
from aws_sandbox.capacity_reservations import render_stored as render_reservation
from aws_sandbox.errors import SandboxError, ec2_bad_token, ec2_dry_run, ec2_invalid
from aws_sandbox.extensions import BLOCK_EXTENSION, extended_end
from aws_sandbox.filters import Documented, ec2_filter
from aws_sandbox.instances import instances_in
from aws_sandbox.lifecycle import Phase, phase
from aws_sandbox.offering_ids import BadOfferingId
from aws_sandbox.offers import BlockOffer
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import Record
from aws_sandbox.zones import zone_id

KIND = "capacity-block"
_TAGGABLE = ("capacity-reservation", "capacity-block")


def _date(member: str) -> Callable[[Mapping[str, Any]], list[str]]:
    # Dates compare as EC2 prints them, so wildcards such as 2026-03-02* work.
    return lambda item: [item[member].strftime("%Y-%m-%dT%H:%M:%S.000Z")]


# The filters each call documents on its page (and botocore 1.44's model), over the rendered
# items. DescribeCapacityBlocks lists `tags`, not tag:<key>, and does not say what its
# value looks like: the sandbox does not guess. DescribeCapacityReservations lists no tag
# filter at all: read `Tags` from the answer.
_BLOCK_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlocks.html",
    unmodelled=frozenset({"tags", "ultraserver-type"}),
    fields={
        "capacity-block-id": lambda b: [b["CapacityBlockId"]],
        "availability-zone": lambda b: [b["AvailabilityZone"]],
        "state": lambda b: [b["State"]],
        "start-date": _date("StartDate"),
        "end-date": _date("EndDate"),
        "create-date": _date("CreateDate"),
    },
)
_RESERVATION_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html",
    fields={
        "instance-type": lambda r: [r["InstanceType"]],
        "owner-id": lambda r: [r["OwnerId"]],
        "instance-platform": lambda r: [r["InstancePlatform"]],
        "availability-zone": lambda r: [r["AvailabilityZone"]],
        "tenancy": lambda r: [r["Tenancy"]],
        "outpost-arn": lambda r: [],
        "state": lambda r: [r["State"]],
        "start-date": _date("StartDate"),
        "end-date": _date("EndDate"),
        "end-date-type": lambda r: [r["EndDateType"]],
        "instance-match-criteria": lambda r: [r["InstanceMatchCriteria"]],
        "placement-group-arn": lambda r: [],
    },
)


class CapacityBlocks:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts

    # --- PurchaseCapacityBlock ----------------------------------------------------------

    def purchase(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        offer = self._offer_from_id(str(params["CapacityBlockOfferingId"]), region)
        now = self._m.clock.now()
        if now > offer.start or not self._m.conditions.available(
            offer.instance_type, offer.start, offer.end, offer.count, region, now
        ):
            # EC2's capacity error is a server error (HTTP 500); nothing was bought.
            raise SandboxError(
                "InsufficientInstanceCapacity",
                "The Capacity Block offering is no longer available. Search for offerings again.",
                500,
            )
        tags = _tags_by_resource_type(params.get("TagSpecifications", []))
        if params.get("DryRun"):
            raise ec2_dry_run()
        clears_at, fails = self._m.payment_outcome(now)
        record: Record = {
            "capacity_block_id": f"cb-{uuid.uuid4().hex[:17]}",
            "capacity_reservation_id": f"cr-{uuid.uuid4().hex[:17]}",
            "region": region,
            "instance_type": offer.instance_type,
            "zone": offer.zone,
            "count": offer.count,
            "platform": params["InstancePlatform"],
            "start": offer.start.isoformat(),
            "end": offer.end.isoformat(),
            "created": now.isoformat(),
            "fee": offer.fee,
            "payment_clears_at": clears_at.isoformat(),
            "payment_fails": fails,
            "reservation_tags": tags["capacity-reservation"],
            "block_tags": tags["capacity-block"],
        }
        self._m.stamp(record, "PurchaseCapacityBlock", now)
        self._m.store.add(KIND, record["capacity_block_id"], record)
        reservation = self._reservation(record, now)
        return {
            "CapacityReservation": reservation,
            "CapacityReservations": [reservation],
            "CapacityBlocks": [self._block(record, now)],
        }

    def _offer_from_id(self, offering_id: str, region: str) -> BlockOffer:
        try:
            offer = BlockOffer.from_offering_id(offering_id)
        except BadOfferingId:
            offer = None
        if offer is None or offer.zone not in self._m.zones_in(region):
            raise ec2_invalid(f"The Capacity Block offering ID '{offering_id}' is not valid.")
        return offer

    # --- DescribeCapacityBlocks / DescribeCapacityReservations ---------------------------

    def describe_blocks(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        now = self._m.clock.now()
        records = self._wanted(
            region, params.get("CapacityBlockIds"), "capacity_block_id", "CapacityBlockId"
        )
        blocks = [self._block(r, now) for r in records]
        return _filtered_page(params, blocks, _BLOCK_FILTERS, "CapacityBlocks")

    def describe_reservations(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """Capacity Blocks' reservations and On-Demand Capacity Reservations alike."""
        now = self._m.clock.now()
        items = [
            self._reservation(r, now)
            for r in self._m.store.records(KIND)
            if r["region"] == region and self._m.shown(r, now)
        ]
        items += [
            render_reservation(self._m.store, r, self._m.account_id, now)
            for r in self._m.store.records(RESERVATION_KIND)
            if r["region"] == region and self._m.shown(r, now)
        ]
        ids = params.get("CapacityReservationIds")
        if ids:
            known = {i["CapacityReservationId"] for i in items}
            missing = [i for i in ids if i not in known]
            if missing:
                raise SandboxError(
                    "InvalidCapacityReservationId.NotFound",
                    f"The capacity reservation ID '{missing[0]}' does not exist",
                )
            items = [i for i in items if i["CapacityReservationId"] in ids]
        return _filtered_page(params, items, _RESERVATION_FILTERS, "CapacityReservations")

    def _wanted(
        self, region: str, ids: Sequence[str] | None, field: str, id_name: str
    ) -> list[Record]:
        """This region's records, or those with these ids (all of which must exist)."""
        now = self._m.clock.now()
        records = [
            r
            for r in self._m.store.records(KIND)
            if r["region"] == region and self._m.shown(r, now)
        ]
        if not ids:
            return records
        known = {r[field] for r in records}
        missing = [i for i in ids if i not in known]
        if missing:
            # EC2's convention for unknown ids, as in InvalidInstanceID.NotFound.
            raise SandboxError(
                f"Invalid{id_name}.NotFound", f"The {id_name} '{missing[0]}' does not exist"
            )
        return [r for r in records if r[field] in ids]

    def _state(self, record: Record, now: datetime) -> Phase:
        return phase(
            now,
            datetime.fromisoformat(record["payment_clears_at"]),
            record["payment_fails"],
            datetime.fromisoformat(record["start"]),
            self._end(record),
        )

    def _end(self, record: Record) -> datetime:
        """The block's end, moved by any extension bought for it."""
        end = datetime.fromisoformat(record["end"])
        owner = record["capacity_reservation_id"]
        now = self._m.clock.now()
        return extended_end(self._m.store, BLOCK_EXTENSION, owner, end, shown_at=now)

    def _reservation(self, record: Record, now: datetime) -> dict[str, Any]:
        state = self._state(record, now)
        region, account = record["region"], self._m.account_id
        reservation_id = record["capacity_reservation_id"]
        return {
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
            "AvailableInstanceCount": (
                max(record["count"] - instances_in(self._m.store, reservation_id, now), 0)
                if state is Phase.ACTIVE
                else 0
            ),
            "EbsOptimized": True,
            "EphemeralStorage": False,
            "State": state.value,
            "StartDate": datetime.fromisoformat(record["start"]),
            "EndDate": self._end(record),
            "EndDateType": "limited",
            "InstanceMatchCriteria": "targeted",
            "CreateDate": datetime.fromisoformat(record["created"]),
            "Tags": record["reservation_tags"],
            "ReservationType": "capacity-block",
            "CapacityBlockId": record["capacity_block_id"],
        }

    def _block(self, record: Record, now: datetime) -> dict[str, Any]:
        return {
            "CapacityBlockId": record["capacity_block_id"],
            "AvailabilityZone": record["zone"],
            "AvailabilityZoneId": zone_id(record["zone"]),
            "CapacityReservationIds": [record["capacity_reservation_id"]],
            "StartDate": datetime.fromisoformat(record["start"]),
            "EndDate": self._end(record),
            "CreateDate": datetime.fromisoformat(record["created"]),
            "State": self._state(record, now).value,
            "Tags": record["block_tags"],
        }


def _tags_by_resource_type(specs: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    tags: dict[str, list[dict[str, str]]] = {kind: [] for kind in _TAGGABLE}
    for spec in specs:
        kind = spec.get("ResourceType")
        if kind not in tags:
            raise ec2_invalid(f"'{kind}' is not a valid taggable resource type for this operation.")
        for tag in spec.get("Tags", []):
            if not tag.get("Key"):
                raise ec2_invalid("Tag keys must not be empty.")
            tags[kind].append({"Key": tag["Key"], "Value": tag.get("Value", "")})
    return tags


def _filtered_page(
    params: Mapping[str, Any], items: list[dict[str, Any]], documented: Documented, key: str
) -> dict[str, Any]:
    keep = ec2_filter(params.get("Filters", []), documented)
    if params.get("DryRun"):
        raise ec2_dry_run()
    page, token = paginate([i for i in items if keep(i)], params, ec2_bad_token, 1000)
    response: dict[str, Any] = {key: page}
    if token:
        response["NextToken"] = token
    return response
