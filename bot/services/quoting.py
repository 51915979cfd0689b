"""Quote a request: fetch the market for it, then compare and recommend.

A request may name one region, several (`region=a,b`) or `region=any`: each region is
quoted at once and `choose_region` recommends one. Region names are checked against the
partition's regions, and the type against what each region sells, before anything is
asked of the market.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from bot.domain.approval import SpendingPolicy
from bot.domain.catalog import Catalog
from bot.domain.comparison import assess_options
from bot.domain.grammar import RequestSyntaxError, parse_request
from bot.domain.market import MarketSnapshot
from bot.domain.outlook import Search, searches_in_quote
from bot.domain.recommendation import Cap, Quote, Recommendation, build_quote, most_usd
from bot.domain.records import DEFAULT_ACCOUNT
from bot.domain.regions import choose_region
from bot.domain.request import CapacityRequest, RequestDraft, searched_regions
from bot.services.ports import Clock, MarketData

# Searched for `region=any` when the catalog names fewer regions for a type.
BROAD_REGIONS = ("us-east-1", "us-east-2", "us-west-2")
_SOURCES = ("on-demand", "sagemaker-on-demand", "spot", "capacity-block", "training-plan")


class QuoteService:
    def __init__(
        self,
        market: MarketData,
        catalog: Catalog,
        clock: Clock,
        default_region: str,
        accounts: Sequence[str] = (DEFAULT_ACCOUNT,),
        limits: SpendingPolicy | None = None,
        record: Callable[[Sequence[Search]], None] | None = None,
    ) -> None:
        """`accounts`: the names a request may give as `account=` (the default first);
        `limits`: the quote recommends among the options they let be submitted;
        `record`: where the offering searches a quote made are remembered (the outlook)."""
        self.record = record
        self.market = market
        self.catalog = catalog
        self.clock = clock
        self.default_region = default_region
        self.accounts = tuple(accounts)
        self.cap = _cap(limits) if limits is not None else None

    def parse(self, text: str) -> RequestDraft:
        """The draft for request text; raises `RequestSyntaxError` on bad input."""
        return parse_request(text, now=self.clock.now(), catalog=self.catalog)

    def complete(self, draft: RequestDraft) -> CapacityRequest:
        """The full request; raises `IncompleteRequest` naming what is missing, or
        `RequestSyntaxError` for an account that is not configured or a region AWS does
        not have (naming the ones there are). Pure and fast: it answers in the ack."""
        if draft.account is not None and draft.account not in self.accounts:
            raise RequestSyntaxError(
                f'there is no account "{draft.account}"',
                token=f"account={draft.account}",
                accepted=", ".join(f"account={name}" for name in self.accounts)
                + " (GPU_BOT_ACCOUNTS; without account= the request runs in "
                f"{self.accounts[0]})",
            )
        request = draft.complete(self.default_region)
        names = searched_regions(request.region)
        for name in (request.region,) if names is None else names:
            self.check_region(name, several=True)
        return request

    def check_region(self, name: str, *, several: bool = False) -> None:
        """`RequestSyntaxError` naming the regions AWS has, unless `name` is one of them
        (`several`: the message also says how to search more than one)."""
        known = self.market.regions()
        if name not in known:
            more = "; several as region=us-east-1,us-west-2, or region=any" if several else ""
            raise RequestSyntaxError(
                f'"{name}" is not an AWS region', token=name, accepted=", ".join(known) + more
            )

    def sold_in(self, instance_type: str, region: str) -> bool | None:
        """Whether EC2 sells the type in the region (None: AWS could not tell): the check
        a quote makes before asking the market anything."""
        return self.market.offered_in(instance_type, region)

    def check_sold(self, request: CapacityRequest) -> None:
        """`RequestSyntaxError` when no region asked for sells the type (for callers that
        refuse before quoting, such as the CLI)."""
        refusal = self.unsold(request)
        if refusal is not None:
            raise RequestSyntaxError(refusal[0], accepted=refusal[1])

    def unsold(self, request: CapacityRequest) -> tuple[str, str] | None:
        """(what is wrong, where it is sold) when no region asked for sells the type;
        None when one does (or AWS could not tell). Where it is sold is asked of EC2 in
        every region of the partition (DescribeInstanceTypeOfferings, cached)."""
        sold, refused = self._sold_regions(request)
        if sold:
            return None
        asked = set(self._candidates(request))
        elsewhere = [
            r
            for r in self.market.regions()
            if r not in asked and self.market.offered_in(request.instance_type, r)
        ]
        if not elsewhere:
            where = f"no region is known to sell {request.instance_type}"
        else:
            first = next((r for r in (self.default_region, *BROAD_REGIONS) if r in elsewhere), None)
            suggest = first or elsewhere[0]
            where = f"it is sold in {', '.join(elsewhere)}: ask with region={suggest}"
        return "; ".join(refused), where

    def quote(self, request: CapacityRequest, seen: list[Search] | None = None) -> Quote:
        """The comparison. The offering searches it made are remembered: added to `seen`
        for the caller to record once the answer is shown, or without `seen` at once."""
        now = self.clock.now()
        refusal = self.unsold(request)
        if refusal is not None:
            return _refused(request, "; ".join(refusal), self.catalog, now)
        sold, refused = self._sold_regions(request)
        if searched_regions(request.region) is None:
            snapshot = self.market.snapshot(request, now)
            self._seen([(request, snapshot)], now, seen)
            return build_quote(request, snapshot, self.catalog, now, self.cap)
        asked = [request.model_copy(update={"region": region}) for region in sold]
        snapshots = self.market.snapshots(asked, now)
        self._seen(list(zip(asked, snapshots, strict=True)), now, seen)
        quotes = [
            build_quote(one, snapshot, self.catalog, now, self.cap)
            for one, snapshot in zip(asked, snapshots, strict=True)
        ]
        return choose_region(quotes, refused)

    def _seen(
        self,
        asked: list[tuple[CapacityRequest, MarketSnapshot]],
        now: datetime,
        seen: list[Search] | None,
    ) -> None:
        if self.record is None:
            return
        searches = [s for one, snap in asked for s in searches_in_quote(one, snap, now)]
        if seen is not None:
            seen.extend(searches)
        else:
            self.record(searches)

    def quote_text(self, text: str) -> Quote:
        return self.quote(self.complete(self.parse(text)))

    def _candidates(self, request: CapacityRequest) -> tuple[str, ...]:
        names = searched_regions(request.region)
        if names is None:
            return (request.region,)
        if names:
            return names
        instance = self.catalog.instance(request.instance_type)
        listed = (
            self.default_region,
            *instance.capacity_blocks.regions,
            *instance.training_plans.regions,
        )
        if len(set(listed)) < len(BROAD_REGIONS):
            listed += BROAD_REGIONS
        known = set(self.market.regions())
        return tuple(r for r in dict.fromkeys(listed) if r in known)

    def _sold_regions(self, request: CapacityRequest) -> tuple[list[str], list[str]]:
        """The candidate regions that sell the type (or could not tell), and a line for
        each that does not."""
        sold: list[str] = []
        refused: list[str] = []
        for region in self._candidates(request):
            if self.market.offered_in(request.instance_type, region) is False:
                refused.append(
                    f"{request.instance_type} is not sold in {region} "
                    "(EC2 DescribeInstanceTypeOfferings)"
                )
            else:
                sold.append(region)
        return sold, refused


def _cap(limits: SpendingPolicy) -> Cap | None:
    """The limit for one request as the quote applies it: an option may be recommended
    when the limits would let it be submitted (judged on the most it can cost)."""
    if limits.max_request_usd is None:
        return None
    return Cap(lambda o: limits.refusal(most_usd(o)) is None, limits.max_request_usd)


def _refused(request: CapacityRequest, reason: str, catalog: Catalog, now: datetime) -> Quote:
    """A quote that asks the market nothing: every option carries the same reason."""
    snapshot = MarketSnapshot(errors=dict.fromkeys(_SOURCES, reason))
    return Quote(
        request=request,
        quoted_at=now,
        options=assess_options(request, snapshot, catalog, now),
        recommendation=Recommendation(kind=None, reasons=[reason]),
    )
