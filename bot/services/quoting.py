"""Quote a request: fetch the market for it, then compare and recommend."""

from __future__ import annotations

from bot.domain.catalog import Catalog
from bot.domain.grammar import parse_request
from bot.domain.recommendation import Quote, build_quote
from bot.domain.request import CapacityRequest, RequestDraft
from bot.services.ports import Clock, MarketData


class QuoteService:
    def __init__(
        self, market: MarketData, catalog: Catalog, clock: Clock, default_region: str
    ) -> None:
        self.market = market
        self.catalog = catalog
        self.clock = clock
        self.default_region = default_region

    def parse(self, text: str) -> RequestDraft:
        """The draft for request text; raises `RequestSyntaxError` on bad input."""
        return parse_request(text, now=self.clock.now(), catalog=self.catalog)

    def complete(self, draft: RequestDraft) -> CapacityRequest:
        """The full request; raises `IncompleteRequest` naming what is missing."""
        return draft.complete(self.default_region)

    def quote(self, request: CapacityRequest) -> Quote:
        now = self.clock.now()
        snapshot = self.market.snapshot(request, now)
        return build_quote(request, snapshot, self.catalog, now)

    def quote_text(self, text: str) -> Quote:
        return self.quote(self.complete(self.parse(text)))
