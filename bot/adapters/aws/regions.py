"""The AWS regions of a partition, from botocore's endpoint data (no call, no credentials)."""

from __future__ import annotations

from functools import cache

import botocore.session


@cache
def partition_regions(home_region: str) -> tuple[str, ...]:
    """The regions EC2 has in the partition of `home_region` (aws, aws-cn, aws-us-gov...)."""
    session = botocore.session.get_session()
    try:
        partition = session.get_partition_for_region(home_region)
    except Exception:  # a region botocore does not know: assume the commercial partition
        partition = "aws"
    return tuple(session.get_available_regions("ec2", partition_name=partition))


class UnknownRegion(ValueError):
    """A region outside the partition: no client is made for it."""
