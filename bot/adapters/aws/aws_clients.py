"""The boto3 clients of one region that a market lookup uses, and the stamps every answer
read from them carries: where it came from, and its times in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.adapters.aws.counting import count_calls
from bot.domain.market import Origin, PriceSource

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sagemaker import SageMakerClient


@dataclass(frozen=True)
class AwsClients:
    ec2: EC2Client
    sagemaker: SageMakerClient
    pricing: PricingClient  # the Pricing API lives in us-east-1 whatever the region
    # The same services for the calls that buy without a client token: sent once, never
    # re-sent by the SDK (see clients.py).
    ec2_once: EC2Client
    sagemaker_once: SageMakerClient
    origin: Origin = Origin.LIVE  # LIVE for AWS, SANDBOX for the simulated market

    def __post_init__(self) -> None:
        for client in (self.ec2, self.sagemaker, self.pricing, self.ec2_once, self.sagemaker_once):
            count_calls(client)


def aws_source(clients: AwsClients, detail: str, now: datetime) -> PriceSource:
    return PriceSource(origin=clients.origin, detail=detail, as_of=now)


def as_utc(value: datetime) -> datetime:
    """botocore parses SageMaker's epoch times in the host's zone, EC2's in UTC: one zone."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
