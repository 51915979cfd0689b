"""SageMaker training plan offerings for a request (SearchTrainingPlanOfferings)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.adapters.aws.aws_clients import AwsClients, as_utc, aws_source
from bot.adapters.aws.offerings import (
    END_SLACK,
    START_SLACK,
    Found,
    SkipOffering,
    read_all,
    required,
    upfront_fee,
)
from bot.domain import offering_rules as rules
from bot.domain.catalog import InstanceType
from bot.domain.market import Offering, OfferingPart, ReservationKind
from bot.domain.request import CapacityRequest, Environment


def training_plans(
    clients: AwsClients, request: CapacityRequest, now: datetime, instance: InstanceType
) -> Found:
    hours = rules.training_plan_duration_for(request.duration_hours)
    count = rules.training_plan_count_for(request.count)
    if (
        hours is None
        or count is None
        or request.environment is Environment.EC2
        or not instance.training_plans.offered  # AWS would answer a ValidationException
    ):
        return Found(asked=False)
    response = clients.sagemaker.search_training_plan_offerings(
        InstanceType=f"ml.{request.instance_type}",  # type: ignore[arg-type]
        InstanceCount=count,
        StartTimeAfter=max(request.start - START_SLACK, now),
        EndTimeBefore=request.start + timedelta(hours=hours) + END_SLACK,
        DurationHours=hours,
        TargetResources=[rules.training_plan_target(request.workload)],  # type: ignore[list-item]
    )
    return read_all(
        list(response.get("TrainingPlanOfferings", [])),
        lambda raw: _training_plan_offering(clients, raw, now),
        "training plan",
        "TrainingPlanOfferingId",
    )


def _training_plan_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    fee, currency = upfront_fee(raw)
    raw_parts = raw.get("ReservedCapacityOfferings") or []
    if not raw_parts:
        raise SkipOffering("AWS sent no ReservedCapacityOfferings (no window to show)")
    parts = tuple(
        OfferingPart(
            instance_type=str(required(p, "InstanceType")).removeprefix("ml."),
            count=required(p, "InstanceCount"),
            zone=p.get("AvailabilityZone"),
            start=as_utc(required(p, "StartTime")),
            end=as_utc(required(p, "EndTime")),
        )
        for p in raw_parts
    )
    hours = required(raw, "DurationHours") + (raw.get("DurationMinutes") or 0) / 60
    if hours <= 0:
        raise SkipOffering(f"DurationHours {hours} is not a duration")
    # Parts side by side in time add up; parts one after another do not.
    concurrent: dict[tuple[datetime, datetime], int] = {}
    for p in parts:
        concurrent[(p.start, p.end)] = concurrent.get((p.start, p.end), 0) + p.count
    return Offering(
        kind=ReservationKind.TRAINING_PLAN,
        offering_id=required(raw, "TrainingPlanOfferingId"),
        instance_type=parts[0].instance_type,
        count=max(concurrent.values()),
        start=min(p.start for p in parts),
        end=max(p.end for p in parts),
        duration_hours=hours,
        upfront_usd=fee,
        currency=currency,
        zone=parts[0].zone,
        parts=parts,
        source=aws_source(clients, "SearchTrainingPlanOfferings", now),
    )
