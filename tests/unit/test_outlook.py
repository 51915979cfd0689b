"""The capacity outlook's aggregation, held against a minute-by-minute simulation of a
seeded market whose figures are worked out from the raw log (not from the counters), the
thin-data wording, and bad input."""

from __future__ import annotations

import random
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pytest

from bot.blocks.outlook import chance_line, hint_line, outlook_lines
from bot.domain.catalog import default_catalog
from bot.domain.grammar import RequestSyntaxError
from bot.domain.market import Offering, Origin, PriceSource, ReservationKind
from bot.domain.outlook import (
    HONEST,
    Counts,
    Search,
    Shape,
    increments,
    merged,
    outlook,
)
from bot.domain.outlook_query import parse_outlook

START = datetime(2026, 9, 1, tzinfo=UTC)
SHAPE = Shape(ReservationKind.CAPACITY_BLOCK, "p5.48xlarge", 16, 72)
REGIONS = ("us-east-1", "us-west-2", "eu-north-1")
SOURCE = PriceSource(origin=Origin.SANDBOX, detail="simulation", as_of=START)


@dataclass
class Listing:
    region: str
    zone: str
    start: datetime
    appears: datetime
    gone: datetime
    usd_per_hour: float


def _market(seed: int, days: int) -> list[Listing]:
    """Offerings appear at random minutes and are bought away after a random while; AWS
    lowers its us-east-1 price a third of the way through."""
    rng = random.Random(seed)
    listings = []
    for _ in range(days * 6):
        appears = START + timedelta(minutes=rng.randrange(days * 24 * 60))
        region = rng.choice(REGIONS)
        lead = timedelta(days=rng.randrange(1, 56), hours=11, minutes=30)
        cut = appears > START + timedelta(days=days // 3) and region == "us-east-1"
        price = rng.choice((31.46, 34.61)) if not cut else rng.choice((28.10, 31.46))
        listings.append(
            Listing(
                region,
                region + rng.choice("ab"),
                (appears + lead).replace(hour=11, minute=30),
                appears,
                appears + timedelta(minutes=rng.randrange(30, 3 * 24 * 60)),
                price,
            )
        )
    return listings


def _offering(listing: Listing, n: int) -> Offering:
    return Offering(
        kind=ReservationKind.CAPACITY_BLOCK,
        offering_id=f"cb-{n}",
        instance_type=SHAPE.instance_type,
        count=SHAPE.count,
        start=listing.start,
        end=listing.start + timedelta(hours=72),
        duration_hours=72,
        upfront_usd=listing.usd_per_hour * SHAPE.count * 72,
        zone=listing.zone,
        source=SOURCE,
    )


def _searches(seed: int, days: int) -> list[Search]:
    """Every minute, a search may be made (a quote or a watch round), asking about starts
    from some day ahead; it sees what is on the market at that minute from then on."""
    market = _market(seed, days)
    rng = random.Random(seed + 1)
    out = []
    for minute in range(days * 24 * 60):
        if rng.random() > 0.004:
            continue
        at = START + timedelta(minutes=minute)
        region = rng.choice(REGIONS)
        asked = at + timedelta(days=rng.randrange(0, 50))
        found = tuple(
            _offering(x, n)
            for n, x in enumerate(market)
            if x.region == region and x.appears <= at < x.gone and x.start >= asked
        )
        out.append(Search(SHAPE, region, at, asked, found))
    return out


def _counters(searches: list[Search]) -> dict[date, list[dict[str, int]]]:
    """As Redis holds them: one hash per day, each search's counts added to it."""
    days: dict[date, list[Counts]] = defaultdict(list)
    for s in searches:
        days[s.at.date()].append(increments(s))
    return {d: [merged(c)] for d, c in days.items()}


def _expected(searches: list[Search], region: str, first: date, last: date) -> dict[str, object]:
    """The figures, worked out from the raw searches."""
    mine = [s for s in searches if first <= s.at.date() <= last and region in ("any", s.region)]
    by_day: dict[date, list[Search]] = defaultdict(list)
    for s in mine:
        by_day[s.at.date()].append(s)
    horizons = {}
    for weeks in (1, 2, 4, 8):
        limit = timedelta(weeks=weeks)
        seen = sum(
            1 for ss in by_day.values() if any(o.start - s.at < limit for s in ss for o in s.found)
        )
        searched = sum(1 for ss in by_day.values() if any(s.asked_from - s.at < limit for s in ss))
        horizons[weeks] = (seen, searched)
    earliest = sorted(
        min((o.start - s.at).days for s in ss for o in s.found)
        for ss in by_day.values()
        if any(s.found for s in ss)
    )
    lows = {
        d: min(round(o.hourly_usd, 2) for s in ss for o in s.found)
        for d, ss in by_day.items()
        if any(s.found for s in ss)
    }
    regions = Counter(r for ss in by_day.values() for r in {s.region for s in ss if s.found})
    return {
        "days_searched": len(by_day),
        "days_seen": sum(1 for ss in by_day.values() if any(s.found for s in ss)),
        "searches": len(mine),
        "offerings": sum(len(s.found) for s in mine),
        "horizons": horizons,
        "earliest": earliest,
        "lows": lows,
        "regions": regions,
        "median_lead": statistics.median(earliest) if earliest else None,
    }


@pytest.mark.parametrize(("seed", "region"), [(7, "any"), (7, "us-east-1"), (11, "us-west-2")])
def test_the_outlook_matches_a_minute_by_minute_market(seed: int, region: str) -> None:
    days = 60
    searches = _searches(seed, days)
    assert len(searches) > 200
    today = (START + timedelta(days=days - 1)).date()
    window = 45
    got = outlook(_counters(searches), [SHAPE], region, today, window)
    want = _expected(searches, region, today - timedelta(days=window - 1), today)
    assert got.days_searched == want["days_searched"]
    assert got.days_seen == want["days_seen"]
    assert got.searches == want["searches"]
    assert got.offerings_seen == want["offerings"]
    assert {h.weeks: (h.seen_days, h.searched_days) for h in got.horizons} == want["horizons"]
    assert sorted(lead for _, lead in got.earliest_leads) == want["earliest"]
    assert {p.day: p.lowest_usd for p in got.prices} == want["lows"]
    assert dict(got.regions) == dict(want["regions"])  # type: ignore[call-overload]
    typical = got.typical_lead()
    assert typical is not None and typical[1] == round(want["median_lead"])  # type: ignore[arg-type]


def test_aws_lowering_its_price_is_marked_on_the_day_it_shows() -> None:
    at = START
    cheap = Listing("us-east-1", "us-east-1a", at + timedelta(days=9), at, at, 28.10)
    dear = Listing("us-east-1", "us-east-1a", at + timedelta(days=9), at, at, 34.61)
    searches = [
        Search(
            SHAPE,
            "us-east-1",
            at + timedelta(days=d),
            at + timedelta(days=d),
            (_offering(dear if d < 3 else cheap, d),),
        )
        for d in range(6)
    ]
    got = outlook(_counters(searches), [SHAPE], "us-east-1", (at + timedelta(days=5)).date(), 30)
    assert [p.changed for p in got.prices] == [False, False, False, True, False, False]
    text = "\n".join(outlook_lines("16x p5.48xlarge, 3-day, us-east-1", got))
    assert "lowest changed on 2026-09-04 ($34.61 → $28.10)" in text


def test_an_empty_search_counts_as_searched_and_not_seen() -> None:
    searches = [Search(SHAPE, "us-east-1", START + timedelta(days=d), START, ()) for d in range(6)]
    got = outlook(_counters(searches), [SHAPE], "us-east-1", (START + timedelta(days=5)).date(), 30)
    assert (got.days_searched, got.days_seen, got.searches_found) == (6, 0, 0)
    assert got.typical_lead() is None and got.price_range() is None


def test_days_outside_the_window_are_left_out() -> None:
    searches = [Search(SHAPE, "us-east-1", START + timedelta(days=d), START, ()) for d in range(20)]
    got = outlook(_counters(searches), [SHAPE], "any", (START + timedelta(days=19)).date(), 7)
    assert got.days_searched == 7


# --- the thin-data wording -------------------------------------------------------------


def _few(days: int) -> list[Search]:
    at = START
    listing = Listing("us-east-1", "us-east-1a", at + timedelta(days=10), at, at, 31.46)
    return [
        Search(
            SHAPE,
            "us-east-1",
            at + timedelta(days=d),
            at + timedelta(days=d),
            (_offering(listing, d),),
        )
        for d in range(days)
    ]


def test_four_days_searched_is_not_enough_and_says_so_plainly() -> None:
    got = outlook(_counters(_few(4)), [SHAPE], "us-east-1", (START + timedelta(days=3)).date(), 30)
    lines = outlook_lines("16x p5.48xlarge, 3-day, us-east-1", got)
    assert lines[1].startswith("Not enough seen yet: 4 searches on 4 days")
    assert lines[-1] == f"({HONEST})"
    assert not any("usually" in line for line in lines)
    assert hint_line("p5 blocks", got) is None
    assert chance_line(got, 1).startswith("How likely a match is: not enough seen yet")


def test_five_days_gives_figures_and_a_thin_horizon_is_named() -> None:
    got = outlook(_counters(_few(6)), [SHAPE], "us-east-1", (START + timedelta(days=5)).date(), 30)
    lines = outlook_lines("16x p5.48xlarge, 3-day, us-east-1", got)
    assert lines[1].startswith("Seen on 6 of 6 days searched")
    # the block starts on day 10: from day 4 on it is less than a week ahead
    assert "1 week: seen on 2 of 6 days searched" in lines[2]
    assert "2 weeks: seen on 6 of 6 days searched" in lines[2]
    assert "usually" in lines[3]
    hint = hint_line("16x p5 3-day blocks in us-east-1", got)
    assert hint is not None and HONEST in hint and hint.endswith("watch for one?")
    assert "6 of 6 days searched (100%" in chance_line(got, 2)


def test_a_horizon_searched_on_too_few_days_says_not_enough() -> None:
    searches = _few(6)
    far = [Search(SHAPE, "us-east-1", s.at, s.at + timedelta(days=40), s.found) for s in searches]
    got = outlook(_counters(far), [SHAPE], "us-east-1", (START + timedelta(days=5)).date(), 30)
    line = outlook_lines("t", got)[2]
    assert "1 week: not enough seen yet (0 days searched)" in line
    assert "8 weeks: seen on" in line


# --- bad input -------------------------------------------------------------------------

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _parse(text: str, max_days: int = 90) -> object:
    return parse_outlook(text, now=NOW, catalog=default_catalog(), max_days=max_days)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("100x p5.48xlarge 3d", "AWS does not sell 100x p5.48xlarge for 72h"),
        ("2x g5.48xlarge 3d", "g5.48xlarge is not sold as either"),
        ("2x p5.48xlarge 3d days=91", '"days=91" is over the outlook\'s window'),
        ("2x p5.48xlarge 3d days=0", '"days=0" is over the outlook\'s window'),
        ("2x p5.48xlarge 3d days=soon", '"days=soon" is not a number of days'),
        ("2x p5.48xlarge", "an outlook needs a duration"),
        ("2x p5.48xlarge 3d from tomorrow", "it takes no start"),
        ("2x q9.huge 3d", "q9.huge"),
    ],
)
def test_bad_input_is_refused_naming_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(RequestSyntaxError) as refused:
        _parse(text)
    assert says in str(refused.value)
    assert "Accepted" in str(refused.value)


def test_a_good_query_names_both_kinds_it_may_be() -> None:
    query = _parse("16x p5.48xlarge 3d region=any days=30")
    assert query.days == 30 and query.region == "any"  # type: ignore[attr-defined]
    kinds = [s.kind for s in query.shapes]  # type: ignore[attr-defined]
    assert kinds == [ReservationKind.CAPACITY_BLOCK, ReservationKind.TRAINING_PLAN]


def test_a_scan_over_twenty_searches_a_round_stops_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.config import ConfigError, load_settings

    shapes = "; ".join(f"{n}x p5.48xlarge {d}d region=any" for n in (1, 2, 4, 8) for d in (2, 3))
    monkeypatch.setenv("GPU_BOT_OUTLOOK_SHAPES", shapes)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert "GPU_BOT_OUTLOOK_SHAPES" in str(refused.value)
    assert "searches a round; at most 20" in str(refused.value)
