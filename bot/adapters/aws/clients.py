"""boto3 clients for a region: live AWS, or the sandbox market on the same clients."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import boto3
from botocore.config import Config
from botocore.retries import standard

from bot.adapters.aws.market import AwsClients
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
    if settings.sandbox:
        from bot.adapters.aws.sandbox import SandboxMarket, sandbox_clients

        market = SandboxMarket(clock=clock)
        return _cached(lambda region: sandbox_clients(market, region))
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

    return _cached(live)


# Throttling codes botocore's standard mode does not know: it retries a fixed list of
# codes, errors the model marks retryable, and HTTP 429. EC2 answers a throttled
# DescribeCapacityBlockOfferings with HTTP 400 and this code, and models no errors.
EXTRA_THROTTLING_CODES = ("CapacityBlockDescribeLimitExceeded",)


def live_client(session: boto3.session.Session, service: str, region: str) -> Any:
    """One client with the adapter's retry policy (RETRIES, plus EXTRA_THROTTLING_CODES)."""
    client = session.client(service, region_name=region, config=RETRIES)  # type: ignore[call-overload]
    retries = client.meta.config.retries or {}
    handler = _RetryThrottlingCodes(EXTRA_THROTTLING_CODES, retries["total_max_attempts"])
    service_id = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(
        f"needs-retry.{service_id}", handler, unique_id="gpu-bot-throttling-codes"
    )
    return client


class _RetryThrottlingCodes:
    """A `needs-retry` handler that retries these error codes the way standard mode
    retries throttling: same attempt limit, same backoff (1 s scale, doubling, jitter).
    botocore takes the first handler's delay that is not None; for every other error this
    returns None and leaves the decision to the standard handler."""

    def __init__(self, codes: Iterable[str], max_attempts: int) -> None:
        self._codes = frozenset(codes)
        self._max_attempts = max_attempts
        self._adapter = standard.RetryEventAdapter()
        self._backoff = standard.ExponentialBackoff(throttling_detector=self)  # type: ignore[arg-type]

    def is_throttling_error_from_context(self, context: standard.RetryContext) -> bool:
        code: object = context.get_error_code()  # the stubs say int; it is the code string
        return code in self._codes

    def __call__(self, **kwargs: Any) -> float | None:
        context = self._adapter.create_retry_context(**kwargs)
        if context.attempt_number >= self._max_attempts:
            return None
        if not self.is_throttling_error_from_context(context):
            return None
        return self._backoff.delay_amount(context)


def _cached(make: Callable[[str], AwsClients]) -> Callable[[str], AwsClients]:
    made: dict[str, AwsClients] = {}
    lock = threading.Lock()

    def get(region: str) -> AwsClients:
        with lock:
            if region not in made:
                made[region] = make(region)
            return made[region]

    return get
