"""Quotes in the request's account: one market adapter (and its thread pool) per account,
made the first time that account is quoted."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.market import AwsMarket
from bot.domain.catalog import Catalog
from bot.domain.market import MarketSnapshot
from bot.domain.request import CapacityRequest
from bot.services.ports import PriceCache


class AccountsMarket:
    def __init__(
        self,
        accounts: AccountClients,
        catalog: Catalog,
        cache: PriceCache,
        price_ttl: timedelta,
        home_region: str,
    ) -> None:
        self._accounts = accounts
        self._catalog = catalog
        self._cache = cache
        self._ttl = price_ttl
        self._home = home_region
        self._markets: dict[str, AwsMarket] = {}
        self._lock = threading.Lock()

    def _market(self, account: str) -> AwsMarket:
        with self._lock:
            if account not in self._markets:
                self._markets[account] = AwsMarket(
                    lambda region: self._accounts.clients(account, region),
                    self._catalog,
                    cache=self._cache,
                    price_ttl=self._ttl,
                    home_region=self._home,
                )
            return self._markets[account]

    def snapshot(self, request: CapacityRequest, now: datetime) -> MarketSnapshot:
        return self._market(self._accounts.resolve(request.account)).snapshot(request, now)

    def snapshots(self, requests: Sequence[CapacityRequest], now: datetime) -> list[MarketSnapshot]:
        if not requests:
            return []
        account = self._accounts.resolve(requests[0].account)
        return self._market(account).snapshots(requests, now)

    def regions(self) -> tuple[str, ...]:
        return self._market(self._accounts.resolve(None)).regions()

    def offered_in(self, instance_type: str, region: str) -> bool | None:
        # What a region sells is asked in the bot's own account.
        market = self._market(self._accounts.resolve(None))
        return market.offered_in(instance_type, region)
