"""SageMaker training plans bought: CreateTrainingPlan, DescribeTrainingPlan and
ListTrainingPlans, with statuses that follow the clock."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from aws_sandbox.errors import SandboxError, sagemaker_invalid
from aws_sandbox.extensions import PLAN_EXTENSION, extended_end
from aws_sandbox.lifecycle import Phase, phase
from aws_sandbox.offering_ids import BadOfferingId
from aws_sandbox.offers import PlanOffer, PlanPart
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import Record
from aws_sandbox.times import hours_and_minutes, parse_time

KIND = "training-plan"

_STATUS = {
    Phase.PAYMENT_PENDING: "Pending",
    Phase.PAYMENT_FAILED: "Failed",
    Phase.SCHEDULED: "Scheduled",
    Phase.ACTIVE: "Active",
    Phase.EXPIRED: "Expired",
}


def _not_found(message: str) -> SandboxError:
    return SandboxError("ResourceNotFound", message)


class TrainingPlans:
    def __init__(self, parts: MarketParts) -> None:
        self._m = parts
        # Instances of the plan that SageMaker runs now (arn, region): the market wires in
        # its endpoints on the plan; none without them.
        self.in_use: Callable[[str, str], int] = lambda _arn, _region: 0

    # --- CreateTrainingPlan --------------------------------------------------------------

    def create(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["TrainingPlanName"])
        # The name check comes first: a retried create must read "already exists" even
        # when its offering has since expired.
        if self._m.store.get(KIND, _key(region, name)) is not None:
            raise _in_use(name)
        offering_id = str(params["TrainingPlanOfferingId"])
        try:
            offer = PlanOffer.from_offering_id(offering_id)
        except BadOfferingId:
            raise _not_found(f"Training plan offering {offering_id} does not exist.") from None
        if not {p.zone for p in offer.parts} <= set(self._m.zones_in(region)):
            raise _not_found(f"Training plan offering {offering_id} does not exist.")
        now = self._m.clock.now()
        if now > offer.start or not self._m.conditions.available(
            offer.instance_type, offer.start, offer.end, offer.count, region, now
        ):
            raise _not_found(f"Training plan offering {offering_id} is no longer available.")
        clears_at, fails = self._m.payment_outcome(now)
        arn = f"arn:aws:sagemaker:{region}:{self._m.account_id}:training-plan/{name}"
        record: Record = {
            "name": name,
            "arn": arn,
            "region": region,
            "instance_type": offer.instance_type,
            "count": offer.count,
            "parts": [
                {"zone": p.zone, "start": p.start.isoformat(), "end": p.end.isoformat()}
                for p in offer.parts
            ],
            "fee": offer.fee,
            "targets": list(offer.targets),
            "created": now.isoformat(),
            "payment_clears_at": clears_at.isoformat(),
            "payment_fails": fails,
            "tags": [dict(t) for t in params.get("Tags", [])],
        }
        self._m.stamp(record, "CreateTrainingPlan", now)
        if not self._m.store.add(KIND, _key(region, name), record):
            raise _in_use(name)
        return {"TrainingPlanArn": arn}

    # --- DescribeTrainingPlan / ListTrainingPlans / ListTags ------------------------------

    def list_tags(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        arn = str(params["ResourceArn"])
        name = arn.rpartition("training-plan/")[2]
        record = self._m.store.get(KIND, _key(region, name))
        if record is None or record["arn"] != arn or not self._m.shown(record, self._m.clock.now()):
            raise _not_found(f"Resource {arn} does not exist.")
        return {"Tags": record["tags"]}

    def describe(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["TrainingPlanName"]).rpartition("training-plan/")[2]
        record = self._m.store.get(KIND, _key(region, name))
        now = self._m.clock.now()
        if record is None or not self._m.shown(record, now):
            raise _not_found(f"Training plan {name} does not exist.")
        return self._summary(record, now) | {"UnhealthyInstanceCount": 0}

    def list_plans(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        now = self._m.clock.now()
        plans = [
            self._summary(r, now)
            for r in self._m.store.records(KIND)
            if r["region"] == region and self._m.shown(r, now)
        ]
        # TrainingPlanFilter's only name is Status; another is refused with the model's
        # enum check before this runs (Valid Values: Status,
        # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_TrainingPlanFilter.html).
        for spec in params.get("Filters", []):
            plans = [p for p in plans if p["Status"] == spec["Value"]]
        if "StartTimeAfter" in params:
            plans = [p for p in plans if p["StartTime"] >= parse_time(params["StartTimeAfter"])]
        if "StartTimeBefore" in params:
            plans = [p for p in plans if p["StartTime"] < parse_time(params["StartTimeBefore"])]
        sort_key = params.get("SortBy", "StartTime")  # a summary member, by the model's enum
        plans.sort(
            key=lambda p: (p[sort_key], p["TrainingPlanName"]),
            reverse=params.get("SortOrder") == "Descending",
        )
        page, token = paginate(
            plans, params, lambda t: sagemaker_invalid(f"Invalid pagination token: {t}"), 10
        )
        response: dict[str, Any] = {"TrainingPlanSummaries": page}
        if token:
            response["NextToken"] = token
        return response

    def _summary(self, record: Record, now: datetime) -> dict[str, Any]:
        parts = [
            PlanPart(
                p["zone"], datetime.fromisoformat(p["start"]), datetime.fromisoformat(p["end"])
            )
            for p in record["parts"]
        ]
        # An extension bought for the plan lengthens its last reserved capacity.
        last = parts[-1]
        owner = _key(record["region"], record["name"])
        parts[-1] = PlanPart(
            last.zone,
            last.start,
            extended_end(self._m.store, PLAN_EXTENSION, owner, last.end, shown_at=now),
        )
        start, end = parts[0].start, parts[-1].end
        status = self._phase(record, now, start, end)
        active = status is Phase.ACTIVE
        in_use = min(self.in_use(record["arn"], record["region"]), record["count"]) if active else 0
        hours, minutes = hours_and_minutes(start, end)
        summary = {
            "TrainingPlanArn": record["arn"],
            "TrainingPlanName": record["name"],
            "Status": _STATUS[status],
            "DurationHours": hours,
            "DurationMinutes": minutes,
            "StartTime": start,
            "EndTime": end,
            "UpfrontFee": record["fee"],
            "CurrencyCode": "USD",
            "TotalInstanceCount": record["count"],
            # SageMaker API Reference, TrainingPlanSummary: InUseInstanceCount "the number
            # of instances currently in use from this training plan", AvailableInstanceCount
            # "the number of instances available for use in this training plan".
            "AvailableInstanceCount": max(record["count"] - in_use, 0) if active else 0,
            "InUseInstanceCount": in_use,
            "TargetResources": record["targets"],
            "ReservedCapacitySummaries": [
                self._reserved_capacity(record, i, part, now) for i, part in enumerate(parts)
            ],
        }
        if status is Phase.PAYMENT_FAILED:
            summary["StatusMessage"] = "The upfront payment for this training plan failed."
        return summary

    def _reserved_capacity(
        self, record: Record, index: int, part: PlanPart, now: datetime
    ) -> dict[str, Any]:
        digest = hashlib.sha256(f"{record['arn']}/{index}".encode()).hexdigest()[:16]
        hours, minutes = hours_and_minutes(part.start, part.end)
        return {
            "ReservedCapacityArn": (
                f"arn:aws:sagemaker:{record['region']}:{self._m.account_id}"
                f":reserved-capacity/{digest}"
            ),
            "ReservedCapacityType": "Instance",
            "InstanceType": f"ml.{record['instance_type']}",
            "TotalInstanceCount": record["count"],
            "Status": _STATUS[self._phase(record, now, part.start, part.end)],
            "AvailabilityZone": part.zone,
            "DurationHours": hours,
            "DurationMinutes": minutes,
            "StartTime": part.start,
            "EndTime": part.end,
        }

    def _phase(self, record: Record, now: datetime, start: datetime, end: datetime) -> Phase:
        clears_at = datetime.fromisoformat(record["payment_clears_at"])
        return phase(now, clears_at, record["payment_fails"], start, end)


def _key(region: str, name: str) -> str:
    return f"{region}/{name}"  # names are unique per account and region


def _in_use(name: str) -> SandboxError:
    return SandboxError("ResourceInUse", f"Training plan {name} already exists.")
