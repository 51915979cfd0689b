"""Time arithmetic shared by the market's desks: parsing request times, block boundaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.utils import parse_to_aware_datetime

from aws_sandbox.rules import block_end_on


def parse_time(value: object) -> datetime:
    """A request timestamp (datetime, ISO string or epoch) as an aware UTC datetime."""
    # botocore accepts all three forms for timestamp members; parse them the same way.
    return parse_to_aware_datetime(value).astimezone(UTC)  # type: ignore[arg-type]


def next_boundary(moment: datetime) -> datetime:
    """The first 11:30 UTC at or after `moment`: where reserved capacity starts and ends."""
    same_day = block_end_on(moment)
    return same_day if same_day >= moment else same_day + timedelta(days=1)


def ceil_half_hour(moment: datetime) -> datetime:
    floor = moment.replace(minute=moment.minute - moment.minute % 30, second=0, microsecond=0)
    return floor if floor == moment else floor + timedelta(minutes=30)


def hours_and_minutes(start: datetime, end: datetime) -> tuple[int, int]:
    hours, minutes = divmod(int((end - start).total_seconds()) // 60, 60)
    return hours, minutes


def to_epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def from_epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
