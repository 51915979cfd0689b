"""boto3 clients per named account and region: the bot's own credentials for the default
account, an assumed role (STS AssumeRole, cached until shortly before it expires) for
each account of GPU_BOT_ACCOUNTS. The sandbox answers STS too, with one simulated market
per account, so the same code runs in tests and in the shell."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3
import redis

from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.clients import RETRIES, live_client, session_clients
from bot.domain.records import DEFAULT_ACCOUNT
from bot.services.ports import Clock

if TYPE_CHECKING:
    from aws_sandbox import SandboxMarket
    from aws_sandbox.iam_guard import IamGuard

# Refresh assumed-role credentials this long before AWS says they expire.
REFRESH_MARGIN = timedelta(minutes=5)
SESSION_NAME = "gpu-bot"


class UnknownAccount(ValueError):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"no account named {name!r}; known: {', '.join(known)}")
        self.name = name


class AssumedRoles:
    """Credentials per role ARN, assumed once and reused until they are about to expire."""

    def __init__(self, sts: Callable[[], Any], clock: Clock) -> None:
        self._sts = sts
        self._clock = clock
        self._cache: dict[str, tuple[dict[str, Any], datetime]] = {}
        self._lock = threading.Lock()
        self.calls = 0  # how many times AssumeRole was called (for tests and metrics)

    def credentials(self, role_arn: str) -> tuple[dict[str, Any], datetime]:
        """(credentials, expiry) for the role."""
        with self._lock:
            cached = self._cache.get(role_arn)
            if cached is not None and self._clock.now() < cached[1] - REFRESH_MARGIN:
                return cached
            response = self._sts().assume_role(RoleArn=role_arn, RoleSessionName=SESSION_NAME)
            self.calls += 1
            creds = response["Credentials"]
            fresh = (creds, creds["Expiration"])
            self._cache[role_arn] = fresh
            return fresh


class AccountClients:
    """`clients(account, region)` for every configured account."""

    def __init__(
        self,
        roles: Mapping[str, str],
        default_account: str,
        make: Callable[[str | None, dict[str, Any] | None, str], AwsClients],
        assumed: AssumedRoles,
    ) -> None:
        """`make(role_arn, credentials, region)` builds clients (role None: own creds)."""
        self.roles = dict(roles)
        self.default = default_account
        self._make = make
        self.assumed = assumed
        self._made: dict[tuple[str, str], tuple[AwsClients, datetime | None]] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        names = [DEFAULT_ACCOUNT, *self.roles]
        return sorted(names, key=lambda n: n != self.default)  # stable: default first

    def resolve(self, account: str | None) -> str:
        name = account or self.default
        if name != DEFAULT_ACCOUNT and name not in self.roles:
            raise UnknownAccount(name, self.names())
        return name

    def clients(self, account: str | None, region: str) -> AwsClients:
        name = self.resolve(account)
        role = self.roles.get(name)
        if role is None:
            return self._cached(name, region, lambda: (self._make(None, None, region), None))
        creds, expiry = self.assumed.credentials(role)
        return self._cached(
            name, region, lambda: (self._make(role, creds, region), expiry), valid_until=expiry
        )

    def _cached(
        self,
        name: str,
        region: str,
        build: Callable[[], tuple[AwsClients, datetime | None]],
        valid_until: datetime | None = None,
    ) -> AwsClients:
        with self._lock:
            made = self._made.get((name, region))
            if made is None or made[1] != valid_until:
                made = build()
                self._made[(name, region)] = made
            return made[0]


def live_accounts(roles: Mapping[str, str], default: str, clock: Clock) -> AccountClients:
    base = boto3.session.Session()
    lock = threading.Lock()

    def sts() -> Any:
        with lock:
            return live_client(base, "sts", "us-east-1")

    def make(role: str | None, creds: dict[str, Any] | None, region: str) -> AwsClients:
        if creds is None:
            return session_clients(base, region, lock)
        with lock:
            session = boto3.session.Session(
                aws_access_key_id=creds["AccessKeyId"],
                aws_secret_access_key=creds["SecretAccessKey"],
                aws_session_token=creds["SessionToken"],
            )
        return session_clients(session, region)

    return AccountClients(roles, default, make, AssumedRoles(sts, clock))


class SandboxAccounts(AccountClients):
    """Accounts on the sandbox market: one simulated market per account id (taken from
    its role ARN), keeping purchases in the bot's Redis when given one, so that other
    processes see them and they survive a killed process."""

    def __init__(
        self,
        roles: Mapping[str, str],
        default: str,
        clock: Clock,
        client: redis.Redis | None = None,
        namespace: str = "gpu",
        markets: Mapping[str, SandboxMarket] | None = None,
        iam: IamGuard | None = None,
    ) -> None:
        """`markets`: account id -> a market to use for it (tests bring their own).
        `iam`: the IAM policies the bot's role has in each account it opens a market for."""
        self._iam = iam
        from aws_sandbox import SANDBOX_ACCOUNT_ID, sandbox_client
        from bot.adapters.aws.sandboxed import sandbox_clients

        self._clock = clock
        self._redis = client
        self._namespace = namespace
        self._markets: dict[str, SandboxMarket] = dict(markets or {})
        self._markets_lock = threading.Lock()
        own = SANDBOX_ACCOUNT_ID

        def make(role: str | None, creds: dict[str, Any] | None, region: str) -> AwsClients:
            return sandbox_clients(self.market_for_id(role.split(":")[4] if role else own), region)

        def sts() -> Any:
            return sandbox_client(self.market_for_id(own), "sts", "us-east-1", RETRIES)

        super().__init__(roles, default, make, AssumedRoles(sts, clock))
        self._own = own

    def market_for_id(self, account_id: str) -> SandboxMarket:
        from aws_sandbox import InMemoryMarketStore, SandboxMarket
        from aws_sandbox.redis_store import RedisMarketStore

        with self._markets_lock:
            if account_id not in self._markets:
                store = (
                    RedisMarketStore(self._redis, self._namespace, scope=account_id)
                    if self._redis is not None
                    else InMemoryMarketStore()
                )
                self._markets[account_id] = SandboxMarket(
                    self._clock, store=store, account_id=account_id, iam=self._iam
                )
            return self._markets[account_id]

    def market(self, account: str | None = None) -> SandboxMarket:
        """The simulated market of a named account (its switches, its purchases)."""
        role = self.roles.get(self.resolve(account))
        return self.market_for_id(role.split(":")[4] if role else self._own)

    def purchase_calls(self) -> int:
        """Purchase calls made in every account, by any process sharing the store."""
        return sum(self.market(name).purchase_calls() for name in self.names())
