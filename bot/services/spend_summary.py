"""The monthly spend summary: posted to the approval channel on the first day of each month
for the month just ended. One job per month (`spend-summary:YYYY-MM`, due at 00:00 UTC on
the 1st after it); the post is once-only by its delivery key, so two workers, a retry or a
second seeding post it once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict

from bot.blocks.spend import spend_blocks, spend_fallback
from bot.domain.budgets import month_of
from bot.domain.deployment.record import Deployment
from bot.services.delivery import OnceOnly
from bot.services.jobs import JobKind, JobRegistry, Retries
from bot.services.ports import Clock, Store
from bot.services.spending import SpendLedger


class MonthJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    month: str  # YYYY-MM, the month reported on


# A summary a few hours late is still useful; past a day of failures an operator looks.
SUMMARY_RETRIES = Retries(attempts=10, first=timedelta(minutes=1), longest=timedelta(hours=4))
SPEND_SUMMARY = JobKind("spend-summary", MonthJob, SUMMARY_RETRIES)


def month_after(month: str) -> str:
    year, number = int(month[:4]), int(month[5:7])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def first_of(month: str) -> datetime:
    return datetime(int(month[:4]), int(month[5:7]), 1, tzinfo=UTC)


def summary_key(month: str) -> str:
    return f"spend-summary:{month}"


class SpendSummary:
    def __init__(
        self,
        ledger: SpendLedger,
        store: Store,
        delivery: OnceOnly,
        clock: Clock,
        approval_channel: str,
        deployments_of: Callable[[str], list[Deployment]] | None = None,
    ) -> None:
        self.ledger = ledger
        self.store = store
        self.delivery = delivery
        self.clock = clock
        self.approval_channel = approval_channel
        self.deployments_of = deployments_of

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(SPEND_SUMMARY, self.run)

    def seed(self) -> None:
        """Schedule this month's summary (due on the 1st of the next): safe to call from
        every worker at start, the job id being the month's."""
        self._schedule(month_of(self.clock.now()))

    def _schedule(self, month: str) -> None:
        due = first_of(month_after(month))
        self.store.schedule(SPEND_SUMMARY.job(month, due, MonthJob(month=month)))

    def run(self, job: MonthJob) -> None:
        """Post the month's summary once, and schedule the next month's."""
        self._schedule(month_after(job.month))
        report = self.ledger.report(job.month, deployments_of=self.deployments_of)
        self.delivery.send(
            summary_key(job.month),
            self.approval_channel,
            spend_fallback(report),
            spend_blocks(report, mention=False),
        )
