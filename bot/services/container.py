"""The services one process runs, as the listeners and the worker see them. The
composition root (bot/app.py) builds them; nothing here knows which adapters it chose."""

from __future__ import annotations

from dataclasses import dataclass

from bot.after_ack import AfterAck
from bot.config import Settings
from bot.domain.catalog import Catalog
from bot.services.approvals import ApprovalService
from bot.services.changes import RequestChanges
from bot.services.deploying import DeployService
from bot.services.extensions import ExtensionService
from bot.services.jobs import JobRegistry
from bot.services.notifications import NotificationService
from bot.services.outlook import OutlookService
from bot.services.outlook_scan import OutlookScan
from bot.services.ports import Clock, Metrics, Store
from bot.services.purchasing import PurchaseService
from bot.services.quoting import QuoteService
from bot.services.reminders import ReminderService
from bot.services.replies import Replies
from bot.services.request_queries import RequestQueries
from bot.services.requests import RequestService
from bot.services.spend_summary import SpendSummary
from bot.services.spending import SpendLedger
from bot.services.submissions import SubmissionRules
from bot.services.usage import UsageService
from bot.services.watching import WatchService


@dataclass
class Services:
    """Everything the listeners and the worker need, wired once per process."""

    settings: Settings
    clock: Clock
    store: Store
    catalog: Catalog
    quotes: QuoteService
    queries: RequestQueries
    requests: RequestService
    submissions: SubmissionRules
    approvals: ApprovalService
    changes: RequestChanges
    purchases: PurchaseService
    notifications: NotificationService
    replies: Replies
    jobs: JobRegistry
    reminders: ReminderService
    extensions: ExtensionService
    deploys: DeployService
    spending: SpendLedger
    spend_summary: SpendSummary
    usage: UsageService
    after_ack: AfterAck
    metrics: Metrics
    watches: WatchService
    outlook: OutlookService
    outlook_scan: OutlookScan

    def start_up(self) -> None:
        """What each worker does once its store answers: index records written before the
        ledger (once; later starts skip it), schedule this month's spend summary and the
        outlook scan's round (when shapes are configured)."""
        self.store.index_ledger(self.clock.now())
        self.spend_summary.seed()
        self.outlook_scan.seed()

    def close(self) -> None:
        self.after_ack.shutdown(wait=True)
