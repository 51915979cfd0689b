"""Extending what was bought: DescribeCapacityBlockExtensionOfferings,
PurchaseCapacityBlockExtension, SearchTrainingPlanOfferings with a plan's ARN, and
ExtendTrainingPlan.

An extension offering starts at the reservation's current end, and its id carries that
end: once an extension is bought the end moves, so buying the same offering again is
refused as AWS refuses a stale offering. Extensions are stored beside the purchase (the
market store is insert-only) and the reservation's end is the latest paid extension's end.

Payment (EC2 User Guide, "Extend Capacity Blocks", Billing): an extension stays
`payment-pending` until the bill is paid; if the payment cannot be processed within 12
hours, or up to 35 minutes before the block ends (whichever comes first), it becomes
`payment-failed` and the block keeps its end. A block with a `payment-pending` extension
cannot be extended again (same page). The market's payment delay and
`conditions.payments_fail` decide each extension's outcome, as they do a purchase's.
DescribeCapacityBlockExtensionHistory and DescribeTrainingPlanExtensionHistory list them
(a training plan extension's PaymentStatus: "Pending", "Completed" as in the SageMaker
guide's "View extension history" example, or "Failed").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_bad_token, ec2_dry_run, ec2_invalid
from aws_sandbox.lifecycle import Phase, phase
from aws_sandbox.offering_ids import BadOfferingId, pack, unpack
from aws_sandbox.offers import upfront_fee
from aws_sandbox.pagination import paginate, same_page_again
from aws_sandbox.parts import MarketParts
from aws_sandbox.rules import extension_hours_valid, extension_window_open
from aws_sandbox.store import MarketStore, Record
from aws_sandbox.times import from_epoch, to_epoch
from aws_sandbox.world import CAPACITY_BLOCK, TRAINING_PLAN
from aws_sandbox.zones import zone_id

BLOCK_EXTENSION = "capacity-block-extension"
PLAN_EXTENSION = "training-plan-extension"
_BLOCK_PREFIX = "cbx-"
_PLAN_PREFIX = "tpx-"
PAYMENT_WITHIN = timedelta(hours=12)
PAYMENT_BEFORE_END = timedelta(minutes=35)
HISTORY_PAGE = 50  # the sandbox's page when MaxResults is not given


def payment_status(record: Record, now: datetime) -> str:
    """payment-pending, payment-succeeded or payment-failed at `now`."""
    settles = record.get("settles_at")
    if settles is None:
        return "payment-succeeded"
    if now < datetime.fromisoformat(settles):
        return "payment-pending"
    return "payment-failed" if record.get("payment_fails") else "payment-succeeded"


def _settlement(parts: MarketParts, now: datetime, current_end: datetime) -> dict[str, Any]:
    """When an extension bought now settles, and how."""
    clears_at = now + parts.conditions.extension_payment_delay
    fails = parts.conditions.payments_fail
    deadline = min(now + PAYMENT_WITHIN, current_end - PAYMENT_BEFORE_END)
    if clears_at > deadline:
        return {"settles_at": max(now, deadline).isoformat(), "payment_fails": True}
    return {"settles_at": clears_at.isoformat(), "payment_fails": fails}


def extended_end(
    store: MarketStore,
    kind: str,
    owner: str,
    end: datetime,
    shown_at: datetime | None = None,
    paid_by: datetime | None = None,
) -> datetime:
    """The end of a reservation after the extensions bought and paid for it (`owner` is
    the reservation id, or region/plan name). With `shown_at`: as AWS's describes show it
    then (an extension can be missing from them for a while); without: as it is. Only
    extensions paid by `paid_by` (default `shown_at`) move the end."""
    paid_by = paid_by or shown_at
    for record in store.records(kind):
        since = record.get("shown_from")
        hidden = shown_at is not None and since and shown_at < datetime.fromisoformat(since)
        paid = paid_by is None or payment_status(record, paid_by) == "payment-succeeded"
        if record["owner"] == owner and not hidden and paid:
            end = max(end, datetime.fromisoformat(record["end"]))
    return end


def extensions_of(store: MarketStore, kind: str, owner: str) -> list[Record]:
    """The extensions bought for `owner`, oldest first."""
    found = [r for r in store.records(kind) if r["owner"] == owner]
    return sorted(found, key=lambda r: r["bought"])


def page_of(items: list[Any], params: Mapping[str, Any]) -> tuple[list[Any], str | None]:
    """One page of `items` by MaxResults / NextToken (an offset, opaque to callers)."""
    token = str(params.get("NextToken") or "0")
    if not token.isdigit():
        raise SandboxError("InvalidParameterValue", f"The token '{token}' is not valid.")
    first = int(token)
    size = int(params.get("MaxResults") or HISTORY_PAGE)
    rest = first + size
    return items[first:rest], (str(rest) if rest < len(items) else None)


class Extensions:
    def __init__(self, parts: MarketParts, blocks_kind: str, plans_kind: str) -> None:
        self._m = parts
        self._blocks_kind = blocks_kind
        self._plans_kind = plans_kind

    # --- Capacity Blocks -----------------------------------------------------------------

    def describe_block_offerings(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        reservation_id = str(params["CapacityReservationId"])
        hours = int(params["CapacityBlockExtensionDurationHours"])
        record = self._block(reservation_id, region)
        now = self._m.clock.now()
        start, end = self._block_window(record)
        self._check_extendable(record, start, end, now, hours)
        if params.get("DryRun"):
            raise ec2_dry_run()
        new_end = end + timedelta(hours=hours)
        # Paginated (NextToken, MaxResults 1-1000): EC2 API Reference,
        # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockExtensionOfferings.html
        if self._m.conditions.take_empty_page("DescribeCapacityBlockExtensionOfferings"):
            again = same_page_again(params, ec2_bad_token)
            return {"CapacityBlockExtensionOfferings": [], "NextToken": again}
        if not self._m.conditions.available(record["instance_type"], end, new_end, record["count"]):
            return {"CapacityBlockExtensionOfferings": []}
        fee = self._fee(CAPACITY_BLOCK, record, region, end, new_end)
        offering_id = pack(_BLOCK_PREFIX, [reservation_id, to_epoch(end), to_epoch(new_end), fee])
        offering = {
            "CapacityBlockExtensionOfferingId": offering_id,
            "InstanceType": record["instance_type"],
            "InstanceCount": record["count"],
            "AvailabilityZone": record["zone"],
            "AvailabilityZoneId": zone_id(record["zone"]),
            "StartDate": start,
            "CapacityBlockExtensionStartDate": end,
            "CapacityBlockExtensionEndDate": new_end,
            "CapacityBlockExtensionDurationHours": hours,
            "UpfrontFee": fee,
            "CurrencyCode": "USD",
            "Tenancy": "default",
        }
        page, token = paginate([offering], params, ec2_bad_token, 1000)
        return {"CapacityBlockExtensionOfferings": page} | ({"NextToken": token} if token else {})

    def purchase_block_extension(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        offering_id = str(params["CapacityBlockExtensionOfferingId"])
        reservation_id = str(params["CapacityReservationId"])
        try:
            owner, start_s, end_s, fee = unpack(_BLOCK_PREFIX, offering_id)
        except (BadOfferingId, ValueError):
            raise _bad_block_offering(offering_id) from None
        record = self._block(reservation_id, region)
        _, current_end = self._block_window(record)
        if owner != reservation_id or to_epoch(current_end) != start_s:
            raise _bad_block_offering(offering_id)  # for another block, or already used
        if params.get("DryRun"):
            raise ec2_dry_run()
        now = self._m.clock.now()
        new_end = from_epoch(end_s)
        extension: Record = {
            "owner": reservation_id,
            "offering_id": offering_id,
            "start": current_end.isoformat(),
            "end": new_end.isoformat(),
            "fee": fee,
            "bought": now.isoformat(),
            **_settlement(self._m, now, current_end),
        }
        self._m.stamp(extension, "PurchaseCapacityBlockExtension", now)
        if not self._m.store.add(BLOCK_EXTENSION, offering_id, extension):
            raise _bad_block_offering(offering_id)
        return {"CapacityBlockExtensions": [self._block_extension(record, extension, now)]}

    def block_extension_history(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        ids = [str(i) for i in params.get("CapacityReservationIds") or []]
        blocks = [r for r in self._m.store.records(self._blocks_kind) if r["region"] == region]
        if ids:
            blocks = [self._block(i, region) for i in ids]
        found = [
            self._block_extension(block, ext, self._m.clock.now())
            for block in blocks
            for ext in extensions_of(
                self._m.store, BLOCK_EXTENSION, block["capacity_reservation_id"]
            )
            if self._shown(ext)
        ]
        page, token = page_of(found, params)
        return {"CapacityBlockExtensions": page} | ({"NextToken": token} if token else {})

    def _shown(self, extension: Record) -> bool:
        since = extension.get("shown_from")
        return not since or self._m.clock.now() >= datetime.fromisoformat(since)

    def _block_extension(self, block: Record, ext: Record, now: datetime) -> dict[str, Any]:
        start = datetime.fromisoformat(ext["start"])
        end = datetime.fromisoformat(ext["end"])
        return {
            "CapacityReservationId": block["capacity_reservation_id"],
            "InstanceType": block["instance_type"],
            "InstanceCount": block["count"],
            "AvailabilityZone": block["zone"],
            "AvailabilityZoneId": zone_id(block["zone"]),
            "CapacityBlockExtensionOfferingId": ext["offering_id"],
            "CapacityBlockExtensionDurationHours": int((end - start).total_seconds() // 3600),
            "CapacityBlockExtensionStatus": payment_status(ext, now),
            "CapacityBlockExtensionPurchaseDate": datetime.fromisoformat(ext["bought"]),
            "CapacityBlockExtensionStartDate": start,
            "CapacityBlockExtensionEndDate": end,
            "UpfrontFee": ext["fee"],
            "CurrencyCode": "USD",
        }

    def _block(self, reservation_id: str, region: str) -> Record:
        for record in self._m.store.records(self._blocks_kind):
            if record["capacity_reservation_id"] == reservation_id and record["region"] == region:
                return record
        raise SandboxError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{reservation_id}' does not exist",
        )

    def _block_window(self, record: Record) -> tuple[datetime, datetime]:
        start = datetime.fromisoformat(record["start"])
        end = datetime.fromisoformat(record["end"])
        owner = record["capacity_reservation_id"]
        now = self._m.clock.now()
        return start, extended_end(self._m.store, BLOCK_EXTENSION, owner, end, paid_by=now)

    # --- training plans ------------------------------------------------------------------

    def search_plan_extensions(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        arn = str(params["TrainingPlanArn"])
        name = arn.rpartition("training-plan/")[2]
        record = self._m.store.get(self._plans_kind, f"{region}/{name}")
        if record is None:
            raise SandboxError("ResourceNotFound", f"Training plan {arn} does not exist.")
        hours = int(params.get("DurationHours", 24))
        now = self._m.clock.now()
        start, end = self._plan_window(region, record)
        try:
            self._check_extendable(record, start, end, now, hours)
        except SandboxError as error:
            raise SandboxError("ValidationException", error.message) from None
        new_end = end + timedelta(hours=hours)
        empty: dict[str, Any] = {"TrainingPlanOfferings": [], "TrainingPlanExtensionOfferings": []}
        if not self._m.conditions.available(record["instance_type"], end, new_end, record["count"]):
            return empty
        fee = self._fee(TRAINING_PLAN, record, region, end, new_end)
        zone = record["parts"][-1]["zone"]
        payload = [region, name, to_epoch(end), to_epoch(new_end), fee, zone]
        offering = {
            "TrainingPlanExtensionOfferingId": pack(_PLAN_PREFIX, payload),
            "AvailabilityZone": zone,
            "StartDate": end,
            "EndDate": new_end,
            "DurationHours": hours,
            "UpfrontFee": fee,
            "CurrencyCode": "USD",
        }
        return empty | {"TrainingPlanExtensionOfferings": [offering]}

    def extend_plan(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        offering_id = str(params["TrainingPlanExtensionOfferingId"])
        try:
            plan_region, name, start_s, end_s, fee, zone = unpack(_PLAN_PREFIX, offering_id)
        except (BadOfferingId, ValueError):
            raise _bad_plan_offering(offering_id) from None
        owner = f"{plan_region}/{name}"
        record = self._m.store.get(self._plans_kind, owner)
        if record is None or plan_region != region:
            raise _bad_plan_offering(offering_id)
        _, current_end = self._plan_window(region, record)
        if to_epoch(current_end) != start_s:
            raise _bad_plan_offering(offering_id)  # already used, or the plan moved
        now = self._m.clock.now()
        new_end = from_epoch(end_s)
        extension: Record = {
            "owner": owner,
            "offering_id": offering_id,
            "start": current_end.isoformat(),
            "end": new_end.isoformat(),
            "fee": fee,
            "bought": now.isoformat(),
            "zone": zone,
            **_settlement(self._m, now, current_end),
        }
        self._m.stamp(extension, "ExtendTrainingPlan", now)
        if not self._m.store.add(PLAN_EXTENSION, offering_id, extension):
            raise _bad_plan_offering(offering_id)
        return {"TrainingPlanExtensions": [_plan_extension(extension, now)]}

    def plan_extension_history(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        arn = str(params["TrainingPlanArn"])
        name = arn.rpartition("training-plan/")[2]
        owner = f"{region}/{name}"
        if self._m.store.get(self._plans_kind, owner) is None:
            raise SandboxError("ResourceNotFound", f"Training plan {arn} does not exist.")
        now = self._m.clock.now()
        found = [
            _plan_extension(ext, now)
            for ext in extensions_of(self._m.store, PLAN_EXTENSION, owner)
            if self._shown(ext)
        ]
        page, token = page_of(found, params)
        return {"TrainingPlanExtensions": page} | ({"NextToken": token} if token else {})

    def _plan_window(self, region: str, record: Record) -> tuple[datetime, datetime]:
        start = datetime.fromisoformat(record["parts"][0]["start"])
        end = datetime.fromisoformat(record["parts"][-1]["end"])
        owner = f"{region}/{record['name']}"
        now = self._m.clock.now()
        return start, extended_end(self._m.store, PLAN_EXTENSION, owner, end, paid_by=now)

    # --- shared --------------------------------------------------------------------------

    def _check_extendable(
        self, record: Record, start: datetime, end: datetime, now: datetime, hours: int
    ) -> None:
        state = phase(
            now,
            datetime.fromisoformat(record["payment_clears_at"]),
            record["payment_fails"],
            start,
            end,
        )
        if state not in (Phase.ACTIVE, Phase.SCHEDULED):
            raise ec2_invalid(
                f"Only active or scheduled reservations can be extended; this one is {state.value}."
            )
        owner = record.get("capacity_reservation_id") or f"{record['region']}/{record['name']}"
        kind = BLOCK_EXTENSION if "capacity_reservation_id" in record else PLAN_EXTENSION
        if any(
            payment_status(ext, now) == "payment-pending"
            for ext in extensions_of(self._m.store, kind, owner)
        ):
            raise ec2_invalid(
                "This reservation has an extension that is payment-pending; it can be "
                "extended again once that payment is processed."
            )
        if not extension_window_open(end, now):
            raise ec2_invalid(
                "An extension can be requested between 1 hour and 56 days before the "
                "reservation expires."
            )
        if not extension_hours_valid(end - start, hours):
            raise ec2_invalid(
                f"The extension duration {hours} hours is not valid: use 24-hour steps up to "
                "14 days, then 7-day steps, up to 182 days in all."
            )

    def _fee(self, kind: str, record: Record, region: str, start: datetime, end: datetime) -> str:
        """At the market's rate for the reservation; the market's price factor moves it."""
        spec = self._m.world.spec(record["instance_type"])
        price = spec.price(kind, region) if spec else None
        usd_per_hour = (price.usd_per_hour if price else 0.0) * self._m.conditions.price_factor
        return upfront_fee(usd_per_hour, start, end, record["count"])


_PLAN_PAYMENT = {
    "payment-pending": ("Pending", "Pending"),
    "payment-failed": ("Failed", "Failed"),
}


def _plan_extension(ext: Record, now: datetime) -> dict[str, Any]:
    start = datetime.fromisoformat(ext["start"])
    end = datetime.fromisoformat(ext["end"])
    settled = "Active" if start <= now < end else "Expired" if now >= end else "Scheduled"
    status, payment = _PLAN_PAYMENT.get(payment_status(ext, now), (settled, "Completed"))
    return {
        "TrainingPlanExtensionOfferingId": ext["offering_id"],
        "ExtendedAt": datetime.fromisoformat(ext["bought"]),
        "StartDate": start,
        "EndDate": end,
        "Status": status,
        "PaymentStatus": payment,
        "AvailabilityZone": ext["zone"],
        "AvailabilityZoneId": zone_id(ext["zone"]),
        "DurationHours": int((end - start).total_seconds() // 3600),
        "UpfrontFee": ext["fee"],
        "CurrencyCode": "USD",
    }


def _bad_block_offering(offering_id: str) -> SandboxError:
    return ec2_invalid(f"The Capacity Block extension offering ID '{offering_id}' is not valid.")


def _bad_plan_offering(offering_id: str) -> SandboxError:
    return SandboxError(
        "ResourceNotFound", f"Training plan extension offering {offering_id} does not exist."
    )
