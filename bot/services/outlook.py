"""The capacity outlook: remembering what the offering searches saw, and answering
`/gpu outlook` / `gpu-bot outlook` from it, and the one-line hints a quote or a watch
carries. Recording is one pipelined write per quote or round, made after the answer
was shown; answering reads the window's hashes in one round trip."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from bot.blocks.elements import context, section
from bot.blocks.outlook import HONEST_LINE, chance_line, hint_line
from bot.domain.catalog import Catalog
from bot.domain.comparison import OptionKind
from bot.domain.grammar import RequestSyntaxError
from bot.domain.market import ReservationKind
from bot.domain.outlook import (
    Outlook,
    OutlookChart,
    Search,
    Shape,
    day_of,
    outlook,
    outlook_chart,
    shapes_for,
)
from bot.domain.outlook_query import OutlookQuery, parse_outlook
from bot.domain.recommendation import Quote
from bot.domain.request import ANY_REGION, CapacityRequest, searched_regions
from bot.services.delivery import OnceOnly, filename_of
from bot.services.jobs import JobKind, JobRegistry, Retries
from bot.services.ports import Clock, FileToShare, JobQueue, Refused
from bot.services.ports.outlook import OutlookLog

log = logging.getLogger(__name__)


class ChartJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str
    text: str  # the query as typed
    at: str  # when it was asked (one chart per asking)


# Draws the outlook chart as a PNG (None: no chart).
Draw = Callable[[OutlookChart], bytes] | None

# A chart only draws what the answer already said: a few tries, then the answer stands.
OUTLOOK_CHART = JobKind("outlook-chart", ChartJob, Retries(attempts=3))


class OutlookService:
    def __init__(
        self,
        store: OutlookLog,
        catalog: Catalog,
        clock: Clock,
        keep_days: int,
        default_region: str,
        regions: Sequence[str],
    ) -> None:
        """`regions`: the regions AWS has (a query naming another is refused)."""
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self.keep_days = keep_days
        self.default_region = default_region
        self.regions = tuple(regions)
        # The hints' figures, by (shapes, region, days): read once per HINT_FRESH, so a
        # quote seldom waits on Redis for its outlook line.
        self._recent: dict[tuple[object, ...], tuple[datetime, Outlook]] = {}
        self._recent_lock = threading.Lock()
        self.jobs: JobQueue | None = None
        self.once: OnceOnly | None = None
        self.draw: Callable[[OutlookChart], bytes] | None = None

    def charts_to(
        self, jobs: JobQueue, once: OnceOnly, draw: Callable[[OutlookChart], bytes] | None
    ) -> None:
        """Where `/gpu outlook` sends its chart: a DM with the outlook, the chart in its
        thread (as the cost chart goes in the approval card's thread). `draw` None: no chart."""
        self.jobs, self.once, self.draw = jobs, once, draw

    def register(self, registry: JobRegistry) -> None:
        registry.register(OUTLOOK_CHART, self.share_chart)

    def chart_later(self, user: str, query: OutlookQuery) -> None:
        if self.jobs is None or self.draw is None:
            return
        now = self.clock.now()
        payload = ChartJob(user=user, text=query.text, at=now.isoformat())
        digest = hashlib.sha256(f"{user}|{query.text}|{payload.at}".encode()).hexdigest()[:16]
        self.jobs.schedule(OUTLOOK_CHART.job(digest, now, payload))

    def share_chart(self, job: ChartJob) -> None:
        """The outlook as a DM to whoever asked, its chart in that DM's thread, once each."""
        once, draw = self.once, self.draw
        if once is None or draw is None:
            return
        try:
            query = self.parse(job.text)
        except RequestSyntaxError:
            return  # the settings changed since: the answer in the ack stands
        region = query.region or self.default_region
        title = query.title(region)
        found = self.answer(query)
        digest = hashlib.sha256(f"{job.user}|{job.text}|{job.at}".encode()).hexdigest()[:16]
        key = f"outlook:{digest}"
        try:
            # The DM's channel (D…) comes back with the post; a run after it was sent
            # finds only the user id it was posted to.
            line = f"Capacity outlook: {title}, last {found.window_days} days: its chart"
            blocks = [section(f"*{line}* (in this thread)"), context(f"_{HONEST_LINE}._")]
            sent = once.send(key, job.user, line, blocks) or once.sent(key)
            if sent is None:
                return
            chart = outlook_chart(title, found)
            once.share_file(
                f"{key}:chart",
                sent.channel,
                sent.ts,
                lambda: FileToShare(filename_of(f"{key}:chart"), f"Outlook: {title}", draw(chart)),
            )
        except Refused as refused:
            if not refused.lasting:
                raise
            log.warning("the outlook chart for %s was refused: %s", job.user, refused)

    def record(self, searches: Sequence[Search]) -> None:
        """Remember the searches; a failure to write costs the outlook a count, never
        the quote or round that searched (it is logged)."""
        if not searches:
            return
        try:
            self.store.record_searches(searches, self.keep_days)
        except Exception:
            log.exception("could not record %d offering searches for the outlook", len(searches))

    def parse(self, text: str) -> OutlookQuery:
        query = parse_outlook(
            text, now=self.clock.now(), catalog=self.catalog, max_days=self.keep_days
        )
        self._check_region(query.region or self.default_region)
        return query

    def _check_region(self, region: str) -> None:
        names = searched_regions(region)
        for name in (region,) if names is None else names:
            if name not in self.regions:
                raise RequestSyntaxError(
                    f'"{name}" is not an AWS region',
                    token=name,
                    accepted=", ".join(self.regions) + ", or region=any",
                )
        if names:
            raise RequestSyntaxError(
                "an outlook looks at one region or all of them",
                token=region,
                accepted="region=NAME or region=any",
            )

    def answer(self, query: OutlookQuery) -> Outlook:
        return self.over(query.shapes, query.region or self.default_region, query.days)

    def over(self, shapes: Sequence[Shape], region: str, days: int) -> Outlook:
        today = day_of(self.clock.now())
        first = today - timedelta(days=days - 1)
        hashes = self.store.outlook_days(shapes, first, today)
        return outlook(hashes, shapes, region, today, days)

    def for_request(self, request: CapacityRequest, days: int) -> Outlook | None:
        """The outlook of a request's shape where it asked (a list of regions: all of
        them) over the last `days`; None when AWS sells no such block or plan."""
        shapes = shapes_for(
            request.instance_type, request.count, request.duration_hours, request.environment
        )
        if not shapes:
            return None
        region = request.region if searched_regions(request.region) is None else ANY_REGION
        try:
            return self.over(shapes, region, days)
        except Exception:
            log.exception("could not read the outlook for %s", request.instance_type)
            return None

    def recent(self, request: CapacityRequest) -> Outlook | None:
        """`for_request` over the hints' days, read again when HINT_FRESH has passed."""
        days = min(HINT_DAYS, self.keep_days)
        shapes = tuple(
            shapes_for(
                request.instance_type, request.count, request.duration_hours, request.environment
            )
        )
        key = (shapes, request.region, days)
        now = self.clock.now()
        with self._recent_lock:
            hit = self._recent.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        found = self.for_request(request, days)
        if found is not None:
            with self._recent_lock:
                if len(self._recent) > RECENT_KEPT:
                    self._recent.clear()
                self._recent[key] = (now + HINT_FRESH, found)
        return found

    def note_for(self, quote: Quote) -> str | None:
        """The outlook's one line for a quote where no block or plan fits, or whose start
        is closer than the median lead such offerings were seen at; None otherwise, or when too
        little was seen to say (the last HINT_DAYS days)."""
        request = quote.request
        seen = self.recent(request)
        if seen is None:
            return None
        typical = seen.typical_lead()
        ahead = (request.start - quote.quoted_at) / timedelta(days=1)
        if not _nothing_reserved_fits(quote) and (typical is None or ahead >= typical[1]):
            return None
        return hint_line(_subject(seen.shapes, seen.region), seen)

    def chance_for(self, request: CapacityRequest, flex_hours: int = 0) -> str | None:
        """How likely a watch of `request` is to see a match, from the same figures (the
        last HINT_DAYS days); None when AWS sells no such block or plan."""
        found = self.recent(request)
        if found is None:
            return None
        ahead = request.start + timedelta(hours=flex_hours) - self.clock.now()
        return chance_line(found, ahead / timedelta(weeks=1))


HINT_DAYS = 30
HINT_FRESH = timedelta(minutes=10)
RECENT_KEPT = 1000
_KIND_WORDS = {
    ReservationKind.CAPACITY_BLOCK: "blocks",
    ReservationKind.TRAINING_PLAN: "plans",
}


def _subject(shapes: Sequence[Shape], region: str) -> str:
    first = shapes[0]
    days = first.hours // 24
    length = f"{days}-day" if first.hours % 24 == 0 else f"{first.hours}-hour"
    kinds = " and ".join(_KIND_WORDS[s.kind] for s in shapes)
    where = "any region" if region == ANY_REGION else region
    return f"{first.count}x {first.instance_type} {length} {kinds} in {where}"


def _nothing_reserved_fits(quote: Quote) -> bool:
    reserved = (OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN)
    return not any(o.eligible for o in quote.options if o.kind in reserved)
