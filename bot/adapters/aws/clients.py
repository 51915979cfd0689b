"""boto3 clients for a region: live AWS, or the sandbox market on the same clients."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

from bot.adapters.aws.market import AwsClients
from bot.adapters.aws.regions import UnknownRegion, partition_regions
from bot.config import Settings
from bot.domain.market import Origin
from bot.services.ports import Clock

# Throttling is retried with botocore's standard mode: exponential backoff with jitter, a
# retry quota, 5 attempts in all (`total_max_attempts`; botocore's `max_attempts` counts
# retries, not attempts).
RETRIES = Config(
    retries={"mode": "standard", "total_max_attempts": 5},
    connect_timeout=5,
    read_timeout=20,
    max_pool_connections=16,
)


def clients_factory(settings: Settings, clock: Clock) -> Callable[[str], AwsClients]:
    """region -> clients, created once per region and shared (boto3 clients are
    thread-safe; sessions are not, so each factory owns its session)."""
    known = partition_regions(settings.aws_region)
    if settings.sandbox:
        from bot.adapters.aws.sandbox import SandboxMarket, sandbox_clients

        market = SandboxMarket(clock=clock)
        return _cached(lambda region: sandbox_clients(market, region), known)
    session = boto3.session.Session()
    lock = threading.Lock()

    def live(region: str) -> AwsClients:
        with lock:
            return AwsClients(
                ec2=live_client(session, "ec2", region),
                sagemaker=live_client(session, "sagemaker", region),
                pricing=live_client(session, "pricing", "us-east-1"),
                origin=Origin.LIVE,
            )

    return _cached(live, known)


def live_client(session: boto3.session.Session, service: str, region: str) -> Any:
    """One client with the adapter's retry policy (RETRIES).

    `CapacityBlockDescribeLimitExceeded` is deliberately not retried: EC2 documents it as
    an account limit (it also answers it when the account's Capacity Block quota is 0), so
    retrying only spends the user's time; the quote says what it means instead."""
    return session.client(service, region_name=region, config=RETRIES)  # type: ignore[call-overload]


def _cached(
    make: Callable[[str], AwsClients], known: tuple[str, ...]
) -> Callable[[str], AwsClients]:
    """Clients are made once per region, and only for the partition's regions: a region
    string a user typed never becomes a client (or a DNS lookup) of its own."""
    made: dict[str, AwsClients] = {}
    lock = threading.Lock()

    def get(region: str) -> AwsClients:
        if region not in known:
            raise UnknownRegion(f"{region} is not an AWS region of this partition")
        with lock:
            if region not in made:
                made[region] = make(region)
            return made[region]

    return get
