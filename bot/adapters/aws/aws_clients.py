"""The boto3 clients of one region that a market lookup uses, and the stamps every answer
read from them carries: where it came from, and its times in UTC."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.adapters.aws.counting import count_calls
from bot.domain.market import Origin, PriceSource

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sagemaker import SageMakerClient


CLIENT_NAMES = ("ec2", "sagemaker", "pricing", "ec2_once", "sagemaker_once")


class AwsClients:
    """The clients of one region, each made when first used: building a botocore client
    takes tens of milliseconds and a few MB, and a region the bot only counts Capacity
    Blocks in needs one EC2 client, not five.

    `make(name)` builds the client called `name` (one of CLIENT_NAMES); `of(...)` takes
    clients already made."""

    def __init__(self, make: Callable[[str], Any], origin: Origin = Origin.LIVE) -> None:
        self._make = make
        self.origin = origin  # LIVE for AWS, SANDBOX for the simulated market
        self._made: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, origin: Origin = Origin.LIVE, **clients: Any) -> AwsClients:
        missing = set(CLIENT_NAMES) - set(clients)
        if missing:
            raise TypeError(f"clients missing: {', '.join(sorted(missing))}")
        return cls(clients.__getitem__, origin)

    def _client(self, name: str) -> Any:
        with self._lock:
            if name not in self._made:
                client = self._make(name)
                count_calls(client)
                self._made[name] = client
            return self._made[name]

    @property
    def ec2(self) -> EC2Client:
        return self._client("ec2")  # type: ignore[no-any-return]

    @property
    def sagemaker(self) -> SageMakerClient:
        return self._client("sagemaker")  # type: ignore[no-any-return]

    @property
    def pricing(self) -> PricingClient:
        """The Pricing API lives in us-east-1 whatever the region."""
        return self._client("pricing")  # type: ignore[no-any-return]

    # The same services for the calls that buy without a client token: sent once, never
    # re-sent by the SDK (see clients.py).
    @property
    def ec2_once(self) -> EC2Client:
        return self._client("ec2_once")  # type: ignore[no-any-return]

    @property
    def sagemaker_once(self) -> SageMakerClient:
        return self._client("sagemaker_once")  # type: ignore[no-any-return]


def aws_source(clients: AwsClients, detail: str, now: datetime) -> PriceSource:
    return PriceSource(origin=clients.origin, detail=detail, as_of=now)


def as_utc(value: datetime) -> datetime:
    """botocore parses SageMaker's epoch times in the host's zone, EC2's in UTC: one zone."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
