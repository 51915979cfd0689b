"""The region list read straight from botocore's data file answers what a botocore
session answers, for every partition and for a region botocore does not know."""

from __future__ import annotations

import threading

import botocore.session
import pytest

from bot.adapters.aws import regions
from bot.adapters.aws.regions import partition_regions


@pytest.mark.parametrize(
    ("home", "partition"),
    [
        ("us-east-1", "aws"),
        ("eu-west-1", "aws"),
        ("cn-north-1", "aws-cn"),
        ("us-gov-west-1", "aws-us-gov"),
        ("us-east-9", "aws"),  # matches the commercial partition's pattern
        ("mars-1", "aws"),  # matches nothing: the commercial partition
    ],
)
def test_same_regions_as_a_botocore_session(home: str, partition: str) -> None:
    session = botocore.session.get_session()
    expected = tuple(session.get_available_regions("ec2", partition_name=partition))
    assert expected  # the comparison covers something
    assert partition_regions(home) == expected


def test_concurrent_first_calls_read_the_data_once(monkeypatch: pytest.MonkeyPatch) -> None:
    regions._partition_regions.cache_clear()
    reads = []
    real = regions.json.loads

    def counting(raw: bytes) -> object:
        reads.append(1)
        return real(raw)

    monkeypatch.setattr(regions.json, "loads", counting)
    threads = [threading.Thread(target=partition_regions, args=("us-west-2",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reads) == 1
