"""The outlook scan: one job (`outlook-scan:round`) asks the configured shapes' searches
once an hour and records what they saw, as a watch round does. A throttled search gives
the job back as a throttled watch round does (the same first wait, doubled by the job's
retries); a describe limit stops that round's remaining searches of the kind."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from bot.domain.catalog import Catalog
from bot.domain.market import ReservationKind
from bot.domain.outlook import Search, search_of_question
from bot.domain.outlook_query import OutlookQuery
from bot.domain.outlook_scan import SCAN_EVERY, scan_questions
from bot.services.jobs import JobKind, JobRegistry, RetryLater
from bot.services.outlook import OutlookService
from bot.services.ports import Clock, JobQueue
from bot.services.ports.watches import OfferingSearch, SearchRefused, SearchThrottled
from bot.services.watch_rounds import THROTTLED_WAIT
from bot.services.watching import ROUND_RETRIES

log = logging.getLogger(__name__)


class ScanJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# The watch rounds' retries: a throttled scan waits as a throttled round does (1 minute,
# doubling to 30).
SCAN = JobKind("outlook-scan", ScanJob, ROUND_RETRIES)


class OutlookScan:
    def __init__(
        self,
        queries: Sequence[OutlookQuery],
        search: OfferingSearch,
        outlook: OutlookService,
        catalog: Catalog,
        clock: Clock,
        jobs: JobQueue,
    ) -> None:
        self.queries = tuple(queries)
        self.search = search
        self.outlook = outlook
        self.catalog = catalog
        self.clock = clock
        self.jobs = jobs
        self.calls = 0

    def register(self, registry: JobRegistry) -> None:
        registry.register(SCAN, self.run)

    def seed(self) -> None:
        """Schedule the round now (from every worker at start: one job id)."""
        if self.queries:
            self.jobs.schedule(SCAN.job("round", self.clock.now(), ScanJob()))

    def run(self, job: ScanJob) -> None:
        self.scan_once()
        raise RetryLater(self.clock.now() + SCAN_EVERY, "next scan")

    def scan_once(self) -> int:
        """One round: every configured search, recorded; how many were made."""
        now = self.clock.now()
        asked = scan_questions(self.queries, self.catalog, self.outlook.default_region, now)
        seen: list[Search] = []
        refused: set[ReservationKind] = set()
        try:
            for q in asked:
                if q.kind in refused:
                    continue
                try:
                    found = self.search.search(q, q.account, now)
                except SearchRefused as exc:
                    log.warning("outlook scan: AWS refused %s searches (%s)", q.kind.value, exc)
                    refused.add(q.kind)
                    continue
                self.calls += 1
                seen.append(
                    search_of_question(
                        q.kind,
                        q.instance_type,
                        q.count,
                        q.duration_hours,
                        q.region,
                        q.earliest,
                        found,
                        now,
                    )
                )
        except SearchThrottled as exc:
            self.outlook.record(seen)
            raise RetryLater(now + THROTTLED_WAIT, f"AWS throttled the scan ({exc})", True) from exc
        self.outlook.record(seen)
        return len(seen)
