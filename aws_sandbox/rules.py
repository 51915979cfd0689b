"""AWS's documented rules for reserved GPU capacity, as the sandbox enforces them.

Written out here from AWS's pages, not taken from the bot: when the bot's own rules are
wrong, the sandbox refuses what AWS would refuse and a test fails.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

# --- EC2 Capacity Blocks for ML ----------------------------------------------------------
# EC2 User Guide, "Capacity Blocks for ML" and the DescribeCapacityBlockOfferings API
# reference (CapacityDurationHours): "1-day increments up to 14 days and 7-day increments
# up to 182 days"; "you can reserve up to 8 weeks in advance"; "up to 64 instances" per
# block; "Capacity Blocks end at 11:30 AM Coordinated Universal Time (UTC)".
BLOCK_DAYS_BY_DAY = 14
BLOCK_MAX_DAYS = 182
BLOCK_MAX_INSTANCES = 64
BLOCK_MAX_LEAD = timedelta(weeks=8)
BLOCK_END_TIME = time(11, 30)


def block_hours_valid(hours: int) -> bool:
    """24-hour steps up to 14 days, then 7-day steps up to 182 days."""
    if hours <= 0 or hours % 24:
        return False
    days = hours // 24
    return days <= BLOCK_DAYS_BY_DAY or (days % 7 == 0 and days <= BLOCK_MAX_DAYS)


def block_start_too_far(start: datetime, now: datetime) -> bool:
    return start - now > BLOCK_MAX_LEAD


def block_end_on(moment: datetime) -> datetime:
    """11:30 UTC on the day of `moment`, where every block ends."""
    return datetime.combine(moment.astimezone(UTC).date(), BLOCK_END_TIME, tzinfo=UTC)


# --- Capacity Block extensions -------------------------------------------------------------
# EC2 User Guide, "Extend Capacity Blocks": an active or scheduled block can be extended
# "between 1 hour and 56 days before" it expires, in the same duration steps as a purchase,
# "up to a total duration of 182 days". SageMaker applies the same to training plans
# (SearchTrainingPlanOfferings with TrainingPlanArn, ExtendTrainingPlan).
EXTEND_LATEST = timedelta(hours=1)
EXTEND_EARLIEST = timedelta(days=56)


def extension_window_open(end: datetime, now: datetime) -> bool:
    return EXTEND_LATEST <= end - now <= EXTEND_EARLIEST


def extension_hours_valid(current: timedelta, hours: int) -> bool:
    return block_hours_valid(hours) and current + timedelta(hours=hours) <= timedelta(
        days=BLOCK_MAX_DAYS
    )


# --- SageMaker training plans --------------------------------------------------------------
# SageMaker API reference, SearchTrainingPlanOfferings: InstanceCount of 1, 2, 4, 8, 16, 32
# or 64; DurationHours in whole days, 1 to 182 days (SageMaker Developer Guide, "Training
# plans": "between 1 day and 182 days, in one-day increments").
PLAN_INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
PLAN_MAX_DAYS = 182


def plan_hours_valid(hours: int) -> bool:
    return hours > 0 and hours % 24 == 0 and hours // 24 <= PLAN_MAX_DAYS
