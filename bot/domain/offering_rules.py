"""The AWS rules of each reserved offering, as pure functions.

Shared by the comparison (is an option possible, and in what shape) and the sandbox market
(which must refuse what AWS would refuse). Sources: EC2 User Guide, Capacity Blocks for
ML; SageMaker developer guide, training plans; ../shared/reference/aws-capacity.md.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from bot.domain.request import Workload

# --- EC2 Capacity Blocks for ML ------------------------------------------------------

CB_MAX_DAYS_BY_DAY = 14  # 1-14 days in 1-day steps ...
CB_STEP_DAYS_AFTER = 7  # ... then 7-day steps ...
CB_MAX_DAYS = 182  # ... up to 182 days.
CB_MAX_AHEAD = timedelta(weeks=8)
CB_MAX_INSTANCES_PER_BLOCK = 64
CB_MAX_INSTANCES_TOTAL = 256
CB_END_TIME_UTC = time(11, 30)
CB_PAYMENT_WINDOW = timedelta(hours=12)
CB_EXPIRY_WARNING = timedelta(minutes=40)
CB_TERMINATION_LEAD = timedelta(minutes=30)

# --- SageMaker training plans --------------------------------------------------------

TP_MAX_DAYS = 182
TP_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
TP_NAME_MAX = 64
# SearchTrainingPlanOfferings `TargetResources`: a plan serves only the resource it targets.
TP_TARGET_LABELS = {
    "training-job": "SageMaker training jobs",
    "hyperpod-cluster": "SageMaker HyperPod clusters",
    "endpoint": "SageMaker inference endpoints",
    "studio-apps": "SageMaker Studio apps",
}


def capacity_block_duration_valid(hours: int) -> bool:
    """Whether AWS accepts this `CapacityDurationHours`."""
    if hours <= 0 or hours % 24:
        return False
    days = hours // 24
    if days <= CB_MAX_DAYS_BY_DAY:
        return True
    return days % CB_STEP_DAYS_AFTER == 0 and days <= CB_MAX_DAYS


def capacity_block_duration_for(hours: int) -> int | None:
    """The shortest valid block that covers `hours`, or None when none is long enough."""
    days = -(-hours // 24)  # whole days, rounded up
    if days > CB_MAX_DAYS_BY_DAY:
        days = -(-days // CB_STEP_DAYS_AFTER) * CB_STEP_DAYS_AFTER
    if days > CB_MAX_DAYS:
        return None
    return max(days, 1) * 24


def capacity_block_start_too_far(start: datetime, now: datetime) -> bool:
    return start - now > CB_MAX_AHEAD


def capacity_block_end(day: datetime) -> datetime:
    """Blocks end at 11:30 UTC: the 11:30 UTC on the date of `day`."""
    return datetime.combine(day.astimezone(UTC).date(), CB_END_TIME_UTC, tzinfo=UTC)


def training_plan_duration_valid(hours: int) -> bool:
    return hours > 0 and hours % 24 == 0 and hours // 24 <= TP_MAX_DAYS


def training_plan_duration_for(hours: int) -> int | None:
    days = max(-(-hours // 24), 1)
    return days * 24 if days <= TP_MAX_DAYS else None


def training_plan_count_for(count: int) -> int | None:
    """The smallest instance count a training plan offers that covers `count`."""
    return next((n for n in TP_INSTANCE_COUNTS if n >= count), None)


def training_plan_target(workload: Workload) -> str:
    """The `TargetResources` value a plan for this workload must have."""
    return "endpoint" if workload in (Workload.INFERENCE, Workload.EVENT) else "training-job"
