"""The capacity outlook: what this account's offering searches saw, remembered per shape
and day, and what that says about how far ahead to ask and what it costs.

Pure. A search (one DescribeCapacityBlockOfferings or SearchTrainingPlanOfferings the bot
made anyway: a quote, `region=any`, a watch round) becomes a handful of counter increments
on one hash per shape and day (`increments`); the outlook reads those hashes back
(`tally`) and sums them over a window (`outlook`). Nothing here knows AWS's capacity: only
what the searches saw, which depends on what people asked for.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from bot.domain import offering_rules as rules
from bot.domain.market import MarketSnapshot, Offering, ReservationKind
from bot.domain.request import CapacityRequest, Environment

# How far ahead a lead is counted day by day (AWS sells blocks and plans up to 8 weeks
# ahead); anything further lands in the last bucket.
MAX_LEAD_DAYS = 57
HORIZONS_WEEKS = (1, 2, 4, 8)
# Fewer days searched than this and a figure says "not enough seen yet".
THIN_DAYS = 5
DEFAULT_WINDOW_DAYS = 90
MAX_WINDOW_DAYS = 365
HONEST = "what this account's searches saw, not AWS's capacity"
NOT_ENOUGH = "not enough seen yet"


@dataclass(frozen=True)
class Shape:
    """What was asked: a kind, a type, a count and a duration (as the search asked them)."""

    kind: ReservationKind
    instance_type: str
    count: int
    hours: int

    @property
    def key(self) -> str:
        return f"{self.kind.value}:{self.instance_type}:{self.count}:{self.hours}"


@dataclass(frozen=True)
class Search:
    """One offering search and what it found (empty: it found nothing)."""

    shape: Shape
    region: str
    at: datetime
    asked_from: datetime  # the earliest start the search asked about
    found: tuple[Offering, ...] = ()


def shapes_for(
    instance_type: str, count: int, hours: int, environment: Environment | None = None
) -> list[Shape]:
    """The shapes AWS sells for a request of this type, count and duration, as the
    searches ask them (a duration rounded to what the kind sells); [] when neither kind
    sells it."""
    out: list[Shape] = []
    if environment is not Environment.SAGEMAKER:
        cb_hours = rules.capacity_block_duration_for(hours)
        if cb_hours is not None and count <= rules.CB_MAX_INSTANCES_PER_BLOCK:
            out.append(Shape(ReservationKind.CAPACITY_BLOCK, instance_type, count, cb_hours))
    if environment is not Environment.EC2:
        tp_hours = rules.training_plan_duration_for(hours)
        tp_count = rules.training_plan_count_for(count)
        if tp_hours is not None and tp_count is not None:
            out.append(Shape(ReservationKind.TRAINING_PLAN, instance_type, tp_count, tp_hours))
    return out


_SNAPSHOT_FIELDS = {
    ReservationKind.CAPACITY_BLOCK: "capacity_blocks",
    ReservationKind.TRAINING_PLAN: "training_plans",
}


def searches_in_quote(
    request: CapacityRequest, snapshot: MarketSnapshot, now: datetime
) -> list[Search]:
    """The offering searches one region's quote made: those AWS answered
    (`snapshot.searched`), what each found; a search not made or that failed is not one."""
    out: list[Search] = []
    for shape in shapes_for(
        request.instance_type, request.count, request.duration_hours, request.environment
    ):
        if shape.kind.value not in snapshot.searched:
            continue
        found: tuple[Offering, ...] = getattr(snapshot, _SNAPSHOT_FIELDS[shape.kind])
        out.append(Search(shape, request.region, now, max(request.start, now), found))
    return out


def search_of_question(
    kind: ReservationKind,
    instance_type: str,
    count: int,
    hours: int,
    region: str,
    earliest: datetime,
    found: Sequence[Offering],
    now: datetime,
) -> Search:
    """A watch round's (or the scan's) one search over a window of starts."""
    return Search(
        Shape(kind, instance_type, count, hours), region, now, max(earliest, now), tuple(found)
    )


def lead_days(start: datetime, at: datetime) -> int:
    """Whole days from `at` to `start`, 0 to MAX_LEAD_DAYS."""
    days = (start - at) // timedelta(days=1)
    return min(max(days, 0), MAX_LEAD_DAYS)


def day_of(at: datetime) -> date:
    return at.astimezone(UTC).date()


def cents_per_hour(offering: Offering) -> int:
    return round(offering.hourly_usd * 100)


def horizon_bucket(lead: int) -> int:
    """The shortest horizon (in weeks) holding a start `lead` days ahead; 9 beyond 8 weeks."""
    return next((w for w in HORIZONS_WEEKS if lead < w * 7), 9)


@dataclass(frozen=True)
class Counts:
    """What one search adds to its shape's hash for its day: counters to add (HINCRBY)
    and lows to keep (the field takes the smaller value)."""

    adds: dict[str, int]
    lows: dict[str, int]


def increments(search: Search) -> Counts:
    """Searches and the searches that found something (per region), the horizon of the
    start asked about, each price seen (per offering, in cents per instance-hour) and each
    zone; kept low: the earliest lead seen, the only lead every figure needs (a day's
    earliest start decides each horizon and the typical lead)."""
    r = search.region
    asked = horizon_bucket(lead_days(search.asked_from, search.at))
    adds: Counter[str] = Counter({f"n|{r}": 1, f"a|{r}|{asked}": 1})
    lows: dict[str, int] = {}
    if search.found:
        adds[f"f|{r}"] += 1
        lows[f"l|{r}"] = min(lead_days(o.start, search.at) for o in search.found)
    for offering in search.found:
        adds[f"p|{r}|{cents_per_hour(offering)}"] += 1
        if offering.zone:
            adds[f"z|{r}|{offering.zone}"] += 1
    return Counts(dict(adds), lows)


def merged(counts: Sequence[Counts]) -> dict[str, int]:
    """Several searches' counts as the hash holds them after all of them."""
    out: Counter[str] = Counter()
    lows: dict[str, int] = {}
    for c in counts:
        out.update(c.adds)
        for name, value in c.lows.items():
            lows[name] = min(value, lows.get(name, value))
    return dict(out) | lows


@dataclass
class RegionDay:
    """One shape's counters for one region and day."""

    searches: int = 0
    found: int = 0
    asked: Counter[int] = field(default_factory=Counter)  # by horizon bucket (weeks)
    earliest: int | None = None  # the earliest lead seen (days)
    prices: Counter[int] = field(default_factory=Counter)
    zones: Counter[str] = field(default_factory=Counter)

    def add(self, other: RegionDay) -> None:
        self.searches += other.searches
        self.found += other.found
        self.asked.update(other.asked)
        if other.earliest is not None:
            mine = self.earliest
            self.earliest = other.earliest if mine is None else min(mine, other.earliest)
        self.prices.update(other.prices)
        self.zones.update(other.zones)

    def seen_within(self, days: int) -> bool:
        return self.earliest is not None and self.earliest < days

    def asked_within(self, weeks: int) -> bool:
        return any(bucket <= weeks for bucket in self.asked)


def tally(fields: Mapping[str, str | int]) -> dict[str, RegionDay]:
    """A shape-day hash read back, by region (fields it does not know are left out)."""
    out: dict[str, RegionDay] = {}
    for name, raw in fields.items():
        parts = name.split("|")
        if len(parts) < 2:
            continue
        day = out.get(parts[1])
        if day is None:
            day = out[parts[1]] = RegionDay()
        value = int(raw)
        tag = parts[0]
        if tag == "n":
            day.searches += value
        elif tag == "f":
            day.found += value
        elif tag == "l":
            day.earliest = value
        elif tag == "a" and len(parts) == 3:
            day.asked[int(parts[2])] += value
        elif tag == "p" and len(parts) == 3:
            day.prices[int(parts[2])] += value
        elif tag == "z" and len(parts) == 3:
            day.zones[parts[2]] += value
    return out


@dataclass(frozen=True)
class Horizon:
    weeks: int
    seen_days: int  # days an offering was seen starting within this horizon
    searched_days: int  # days a search asked about a start within it

    @property
    def thin(self) -> bool:
        return self.searched_days < THIN_DAYS


@dataclass(frozen=True)
class PriceDay:
    day: date
    lowest_usd: float
    median_usd: float
    offerings: int
    changed: bool  # the lowest differs from the day before it that had a price


@dataclass(frozen=True)
class Outlook:
    shapes: tuple[Shape, ...]
    region: str  # one region, or "any"
    window_days: int
    today: date
    days_searched: int
    days_seen: int
    searches: int
    searches_found: int
    offerings_seen: int
    horizons: tuple[Horizon, ...]
    earliest_leads: tuple[tuple[date, int], ...]  # per day seen, its earliest lead (days)
    prices: tuple[PriceDay, ...]
    regions: tuple[tuple[str, int], ...]  # days seen per region, most first
    zones: tuple[tuple[str, int], ...]

    @property
    def thin(self) -> bool:
        return self.days_searched < THIN_DAYS

    @property
    def lead_thin(self) -> bool:
        return len(self.earliest_leads) < THIN_DAYS

    def typical_lead(self) -> tuple[int, int, int] | None:
        """(quartile, median, quartile) of the earliest lead on each day seen; None when
        too few days saw it."""
        if self.lead_thin:
            return None
        leads = sorted(lead for _, lead in self.earliest_leads)
        q1, median, q3 = statistics.quantiles(leads, n=4, method="inclusive")
        return round(q1), round(median), round(q3)

    def price_range(self) -> tuple[float, float] | None:
        """Lowest and median per instance-hour over the window (None: nothing seen)."""
        if not self.prices:
            return None
        lows = [p.lowest_usd for p in self.prices]
        medians = [p.median_usd for p in self.prices]
        return min(lows), statistics.median(medians)

    def horizon_for(self, lead: timedelta) -> Horizon:
        """The shortest horizon that holds a start `lead` from now (the last one beyond)."""
        for h in self.horizons:
            if lead <= timedelta(weeks=h.weeks):
                return h
        return self.horizons[-1]


def outlook(
    days: Mapping[date, Sequence[Mapping[str, str | int]]],
    shapes: Sequence[Shape],
    region: str,
    today: date,
    window_days: int,
) -> Outlook:
    """The outlook over the `window_days` ending `today`. `days`: per day, the hashes of
    the shapes asked (one per kind); `region`: a region, or "any" for all of them."""
    per_day: dict[date, RegionDay] = {}
    by_region: Counter[str] = Counter()
    first = today - timedelta(days=window_days - 1)
    for day in sorted(days):
        if not first <= day <= today:
            continue
        merged = RegionDay()
        seen_regions: set[str] = set()
        for fields in days[day]:
            for name, one in tally(fields).items():
                if region not in ("any", name):
                    continue
                merged.add(one)
                if one.found:
                    seen_regions.add(name)
        if merged.searches:
            per_day[day] = merged
            by_region.update(seen_regions)
    return _figures(per_day, by_region, shapes, region, today, window_days)


def _figures(
    per_day: Mapping[date, RegionDay],
    by_region: Counter[str],
    shapes: Sequence[Shape],
    region: str,
    today: date,
    window_days: int,
) -> Outlook:
    horizons = []
    for weeks in HORIZONS_WEEKS:
        horizons.append(
            Horizon(
                weeks,
                seen_days=sum(1 for d in per_day.values() if d.seen_within(weeks * 7)),
                searched_days=sum(1 for d in per_day.values() if d.asked_within(weeks)),
            )
        )
    earliest = tuple(
        (day, d.earliest) for day, d in sorted(per_day.items()) if d.earliest is not None
    )
    zones: Counter[str] = Counter()
    for d in per_day.values():
        zones.update(d.zones)
    return Outlook(
        shapes=tuple(shapes),
        region=region,
        window_days=window_days,
        today=today,
        days_searched=len(per_day),
        days_seen=sum(1 for d in per_day.values() if d.found),
        searches=sum(d.searches for d in per_day.values()),
        searches_found=sum(d.found for d in per_day.values()),
        offerings_seen=sum(sum(d.prices.values()) for d in per_day.values()),
        horizons=tuple(horizons),
        earliest_leads=earliest,
        prices=_price_days(per_day),
        regions=tuple(by_region.most_common()),
        zones=tuple(zones.most_common(5)),
    )


def _price_days(per_day: Mapping[date, RegionDay]) -> tuple[PriceDay, ...]:
    out: list[PriceDay] = []
    last: float | None = None
    for day in sorted(per_day):
        prices = per_day[day].prices
        if not prices:
            continue
        lowest = min(prices) / 100
        out.append(
            PriceDay(
                day,
                lowest,
                _weighted_median(prices) / 100,
                sum(prices.values()),
                changed=last is not None and abs(lowest - last) > 0.005,
            )
        )
        last = lowest
    return tuple(out)


def _weighted_median(counts: Counter[int]) -> float:
    values = sorted(counts.elements())
    return float(statistics.median(values))


@dataclass(frozen=True)
class OutlookChart:
    """What the outlook chart draws: per day seen, the earliest lead; per day with a
    price, the lowest and median per instance-hour; the days AWS changed the lowest."""

    title: str
    lead_days: tuple[tuple[str, int], ...]
    prices: tuple[tuple[str, float, float], ...]
    changes: tuple[str, ...]
    note: str = HONEST


def outlook_chart(title: str, o: Outlook) -> OutlookChart:
    return OutlookChart(
        title=title,
        lead_days=tuple((d.isoformat(), lead) for d, lead in o.earliest_leads),
        prices=tuple((p.day.isoformat(), p.lowest_usd, p.median_usd) for p in o.prices),
        changes=tuple(p.day.isoformat() for p in o.prices if p.changed),
    )


def outlook_dict(title: str, o: Outlook) -> dict[str, object]:
    """The outlook as plain data (`gpu-bot outlook --json`)."""
    typical = o.typical_lead()
    prices = o.price_range()
    return {
        "title": title,
        "what_it_is": HONEST,
        "window_days": o.window_days,
        "today": o.today.isoformat(),
        "enough_seen": not o.thin,
        "days_searched": o.days_searched,
        "days_seen": o.days_seen,
        "searches": o.searches,
        "searches_that_found": o.searches_found,
        "offerings_seen": o.offerings_seen,
        "horizons": [
            {
                "weeks": h.weeks,
                "days_seen": h.seen_days,
                "days_searched": h.searched_days,
                "enough_seen": not h.thin,
            }
            for h in o.horizons
        ],
        "typical_lead_days": None
        if typical is None
        else {"low": typical[0], "median": typical[1], "high": typical[2]},
        "lead_days_seen": len(o.earliest_leads),
        "price_per_instance_hour": None
        if prices is None
        else {"lowest": prices[0], "median": prices[1]},
        "price_days": [
            {
                "day": p.day.isoformat(),
                "lowest": p.lowest_usd,
                "median": p.median_usd,
                "offerings": p.offerings,
                "changed": p.changed,
            }
            for p in o.prices
        ],
        "regions": [{"region": r, "days_seen": n} for r, n in o.regions],
        "zones": [{"zone": z, "offerings": n} for z, n in o.zones],
    }
