"""Several regions searched for one request: which one to recommend, and why.

`region=any` or `region=us-east-1,us-west-2` asks for the same capacity in each region;
each region gets its own quote, and this picks the region whose recommended option starts
closest to the asked start (a reservation that slips a day is a different plan), then the
cheapest. Pure: the quotes come from the services.
"""

from __future__ import annotations

from bot.domain.recommendation import Quote, RegionQuote
from bot.domain.words import counted

# Starts within this many hours of each other count as the same start.
SAME_START_HOURS = 12


def choose_region(quotes: list[Quote], left_out: list[str]) -> Quote:
    """The quote of the region to recommend, carrying every region's options and a
    recommendation that names its region and why."""
    assert quotes, "at least one region"
    summaries = [_summary(q) for q in quotes]
    possible = [q for q in quotes if q.recommended is not None]
    if not possible:
        first = quotes[0]
        reasons = [
            f"no region of the {len(quotes)} searched has an option for this request",
            *left_out,
        ]
        rec = first.recommendation.model_copy(
            update={"reasons": reasons + first.recommendation.reasons, "region": None}
        )
        return first.model_copy(update={"recommendation": rec, "regions": summaries})
    best = min(possible, key=_rank)
    chosen = best.recommended
    assert chosen is not None and chosen.total_usd is not None
    region = best.request.region
    others = [s for s in summaries if s.region != region]
    why = _why(best, possible)
    lines = [f"region {region}: {chosen.kind.label} at ${chosen.total_usd:,.2f}; {why}"]
    if others:
        lines.append("other regions: " + "; ".join(_other_line(s) for s in others))
    lines += left_out
    rec = best.recommendation.model_copy(
        update={"reasons": lines + best.recommendation.reasons, "region": region}
    )
    return best.model_copy(update={"recommendation": rec, "regions": summaries})


def _rank(quote: Quote) -> tuple[int, float]:
    option = quote.recommended
    assert option is not None and option.total_usd is not None
    slip = 0
    if option.offering is not None:
        hours = abs((option.offering.start - quote.request.start).total_seconds()) / 3600
        slip = int(hours // SAME_START_HOURS)
    return slip, option.total_usd


def _why(best: Quote, possible: list[Quote]) -> str:
    if len(possible) == 1:
        return "the only region searched where an option fits"
    cheaper = [q for q in possible if _rank(q)[1] < _rank(best)[1]]
    if cheaper:
        return (
            "its start is closest to the one asked for; cheaper regions start later "
            f"({', '.join(q.request.region for q in cheaper)})"
        )
    return f"the cheapest of the {counted(len(possible), 'region')} where an option fits"


def _summary(quote: Quote) -> RegionQuote:
    option = quote.recommended
    return RegionQuote(
        region=quote.request.region,
        recommended=option.kind if option else None,
        total_usd=option.total_usd if option else None,
        start=option.offering.start if option and option.offering else None,
        options=quote.options,
    )


def _other_line(summary: RegionQuote) -> str:
    if summary.recommended is None or summary.total_usd is None:
        return f"{summary.region}: nothing fits"
    start = f" from {summary.start:%Y-%m-%d %H:%M} UTC" if summary.start else ""
    return f"{summary.region}: {summary.recommended.label} ${summary.total_usd:,.2f}{start}"
