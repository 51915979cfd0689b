"""The AWS regions of a partition, from botocore's endpoint data (no call, no credentials).

Read from the data file itself rather than through a botocore session: a session costs
the serving process about 20 MB for good, and this is asked on the ack path."""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from importlib import resources
from typing import Any

_lock = threading.Lock()  # concurrent first calls read the file once


def partition_regions(home_region: str) -> tuple[str, ...]:
    """The regions EC2 has in the partition of `home_region` (aws, aws-cn, aws-us-gov...):
    what botocore's `get_available_regions("ec2", partition)` answers."""
    with _lock:
        return _partition_regions(home_region)


@cache
def _partition_regions(home_region: str) -> tuple[str, ...]:
    raw = resources.files("botocore").joinpath("data", "endpoints.json").read_bytes()
    partitions: list[dict[str, Any]] = json.loads(raw)["partitions"]
    # A region botocore does not know: assume the commercial partition.
    partition = next(
        (p for p in partitions if _in_partition(p, home_region)),
        next(p for p in partitions if p["partition"] == "aws"),
    )
    endpoints = partition["services"].get("ec2", {}).get("endpoints", {})
    return tuple(name for name in endpoints if name in partition["regions"])


def _in_partition(partition: dict[str, Any], region: str) -> bool:
    if region in partition["regions"]:
        return True
    regex = partition.get("regionRegex")
    return bool(regex and re.match(regex, region))


class UnknownRegion(ValueError):
    """A region outside the partition: no client is made for it."""
