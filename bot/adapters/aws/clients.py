"""boto3 clients for a region: live AWS, or the sandbox market on the same clients."""

from __future__ import annotations

import threading
from collections.abc import Callable

import boto3
from botocore.config import Config

from bot.adapters.aws.market import AwsClients
from bot.adapters.clock import Clock
from bot.config import Settings
from bot.domain.market import Origin

# Throttling (e.g. CapacityBlockDescribeLimitExceeded) is retried with botocore's
# standard mode: exponential backoff with jitter, a retry quota, 5 attempts in all.
RETRIES = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=20,
    max_pool_connections=16,
)


def clients_factory(settings: Settings, clock: Clock) -> Callable[[str], AwsClients]:
    """region -> clients, created once per region and shared (boto3 clients are
    thread-safe; sessions are not, so each factory owns its session)."""
    if settings.sandbox:
        from bot.adapters.aws.sandbox import SandboxMarket, sandbox_clients

        market = SandboxMarket(clock=clock)
        return _cached(lambda region: sandbox_clients(market, region))
    session = boto3.session.Session()
    lock = threading.Lock()

    def live(region: str) -> AwsClients:
        with lock:
            return AwsClients(
                ec2=session.client("ec2", region_name=region, config=RETRIES),
                sagemaker=session.client("sagemaker", region_name=region, config=RETRIES),
                pricing=session.client("pricing", region_name="us-east-1", config=RETRIES),
                origin=Origin.LIVE,
            )

    return _cached(live)


def _cached(make: Callable[[str], AwsClients]) -> Callable[[str], AwsClients]:
    made: dict[str, AwsClients] = {}
    lock = threading.Lock()

    def get(region: str) -> AwsClients:
        with lock:
            if region not in made:
                made[region] = make(region)
            return made[region]

    return get
