"""boto3 clients for a region: live AWS, or the sandbox market on the same clients.

Two retry policies, decided here for every call the bot makes:
- RETRIES, for reads, searches and the purchases whose re-send is harmless: botocore's
  standard mode (exponential backoff with jitter, a retry quota, 5 attempts in all).
  CreateCapacityReservation carries a ClientToken and CreateTrainingPlan a unique name, so
  AWS answers a re-sent one with the reservation or plan it already made (or "exists"),
  never a second one: they may keep these retries.
- ONCE, for the calls that buy and carry no client token (PurchaseCapacityBlock,
  PurchaseCapacityBlockExtension, ExtendTrainingPlan): sent once, never re-sent by the SDK,
  with a read timeout long enough for a slow answer. A re-send after AWS committed would be
  a second purchase, or an error about the first that reads as "nothing was bought"; an
  answer that does not come is reconciled instead (bot/adapters/aws/purchasing.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.regions import UnknownRegion, partition_regions
from bot.config import Settings
from bot.domain.market import Origin
from bot.services.ports import Clock

RETRIES = Config(
    retries={"mode": "standard", "total_max_attempts": 5},
    connect_timeout=5,
    read_timeout=20,
    max_pool_connections=16,
)
ONCE = Config(
    retries={"mode": "standard", "total_max_attempts": 1},
    connect_timeout=10,
    read_timeout=120,
    max_pool_connections=4,
)
PRICING_REGION = "us-east-1"  # the Pricing API is served there whatever the region

# (service, region, config) -> a boto3 client
ClientMaker = Callable[[str, str, Config], Any]


def make_clients(client: ClientMaker, region: str, origin: Origin) -> AwsClients:
    """Every client the adapters use in one region, each with its retry policy (made when
    first used)."""
    specs = {
        "ec2": ("ec2", region, RETRIES),
        "sagemaker": ("sagemaker", region, RETRIES),
        "pricing": ("pricing", PRICING_REGION, RETRIES),
        "ec2_once": ("ec2", region, ONCE),
        "sagemaker_once": ("sagemaker", region, ONCE),
    }
    return AwsClients(lambda name: client(*specs[name]), origin)


def session_clients(
    session: boto3.session.Session, region: str, lock: threading.Lock | None = None
) -> AwsClients:
    """Live clients on a boto3 session. Sessions are not thread-safe: `lock` is the one
    every user of `session` holds while it makes a client."""
    held = lock or threading.Lock()

    def client(service: str, where: str, config: Config) -> Any:
        with held:
            return session.client(service, region_name=where, config=config)  # type: ignore[call-overload]

    return make_clients(client, region, Origin.LIVE)


def clients_factory(settings: Settings, clock: Clock) -> Callable[[str], AwsClients]:
    """region -> clients, created once per region and shared (boto3 clients are
    thread-safe; sessions are not, so each factory owns its session)."""
    known = partition_regions(settings.aws_region)
    if settings.sandbox:
        from aws_sandbox import SandboxMarket
        from bot.adapters.aws.sandboxed import sandbox_clients

        market = SandboxMarket(clock=clock)
        return _cached(lambda region: sandbox_clients(market, region), known)
    session = boto3.session.Session()
    lock = threading.Lock()

    def live(region: str) -> AwsClients:
        return session_clients(session, region, lock)

    return _cached(live, known)


def live_client(session: boto3.session.Session, service: str, region: str) -> Any:
    """One client with the read policy (RETRIES).

    `CapacityBlockDescribeLimitExceeded` is deliberately not retried (botocore does not
    count it as throttling): EC2 documents it as an account limit (it also answers it when
    the account's Capacity Block quota is 0), so retrying only spends the user's time; the
    quote says what it means instead."""
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
