"""EC2 Capacity Block offerings for a request (DescribeCapacityBlockOfferings)."""

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


def capacity_blocks(
    clients: AwsClients, request: CapacityRequest, now: datetime, instance: InstanceType
) -> Found:
    hours = rules.capacity_block_duration_for(request.duration_hours)
    if (
        hours is None
        or not instance.capacity_blocks.offered
        or request.environment is Environment.SAGEMAKER
        or request.count > rules.CB_MAX_INSTANCES_PER_BLOCK
        or rules.capacity_block_start_too_far(request.start, now)
    ):
        return Found(asked=False)  # the comparison explains why; no point asking AWS
    start_from = max(request.start - START_SLACK, now)
    raws: list[Any] = []
    paginator = clients.ec2.get_paginator("describe_capacity_block_offerings")
    for page in paginator.paginate(
        InstanceType=request.instance_type,
        InstanceCount=request.count,
        CapacityDurationHours=hours,
        StartDateRange=start_from,
        EndDateRange=request.start + timedelta(hours=hours) + END_SLACK,
    ):
        raws.extend(page.get("CapacityBlockOfferings", []))
    return read_all(
        raws,
        lambda raw: _capacity_block_offering(clients, raw, now),
        "Capacity Block",
        "CapacityBlockOfferingId",
    )


def _capacity_block_offering(clients: AwsClients, raw: Any, now: datetime) -> Offering:
    fee, currency = upfront_fee(raw)
    start, end = as_utc(required(raw, "StartDate")), as_utc(required(raw, "EndDate"))
    if end <= start:
        raise SkipOffering("it ends before it starts")
    hours = (
        required(raw, "CapacityBlockDurationHours")
        + (raw.get("CapacityBlockDurationMinutes") or 0) / 60
    )
    instance_type, count = required(raw, "InstanceType"), required(raw, "InstanceCount")
    zone = raw.get("AvailabilityZone")
    part = OfferingPart(instance_type=instance_type, count=count, zone=zone, start=start, end=end)
    return Offering(
        kind=ReservationKind.CAPACITY_BLOCK,
        offering_id=required(raw, "CapacityBlockOfferingId"),
        instance_type=instance_type,
        count=count,
        start=start,
        end=end,
        duration_hours=hours,
        upfront_usd=fee,
        currency=currency,
        zone=zone,
        zone_type=raw.get("ZoneType"),
        parts=(part,),
        source=aws_source(clients, "DescribeCapacityBlockOfferings", now),
    )
