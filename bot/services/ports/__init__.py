"""The outside world as the services see it: small interfaces, and the types they speak,
that the adapters implement. Services import these, never an adapter."""

from bot.services.ports.aftercare import ExtensionMarket, ExtensionUnavailable, Leftovers
from bot.services.ports.charts import ChartRenderer
from bot.services.ports.clock import Clock
from bot.services.ports.delivery import (
    DeliveryLog,
    DeliveryRecord,
    DeliveryStart,
    DeliveryState,
    FileSharer,
    FileToShare,
    Poster,
    RateLimited,
    Refused,
    Uncertain,
)
from bot.services.ports.deployments import DeploymentConflict, Deployments
from bot.services.ports.hosting import Hosting, HostingError, Resource
from bot.services.ports.jobs import ClaimedJob, Intake, Job, JobIntake, JobQueue
from bot.services.ports.market import MarketData, PriceCache
from bot.services.ports.metrics import Metrics, NoMetrics, StoreCounts
from bot.services.ports.people import GroupDirectory, Notifier
from bot.services.ports.purchasing import Order, PurchaseError, PurchaseProblem, Purchaser
from bot.services.ports.store import (
    BudgetMoved,
    Cache,
    Deliveries,
    MoneyIndex,
    Requests,
    Store,
    VersionConflict,
)
from bot.services.ports.usage import Measure, Target, UsageMeter, UsageSamples
from bot.services.ports.watches import (
    OfferingSearch,
    SearchRefused,
    SearchThrottled,
    WatchesFull,
    WatchStore,
)

__all__ = [
    "BudgetMoved",
    "Cache",
    "ChartRenderer",
    "ClaimedJob",
    "Clock",
    "Deliveries",
    "DeliveryLog",
    "DeliveryRecord",
    "DeliveryStart",
    "DeliveryState",
    "DeploymentConflict",
    "Deployments",
    "ExtensionMarket",
    "ExtensionUnavailable",
    "FileSharer",
    "FileToShare",
    "GroupDirectory",
    "Hosting",
    "HostingError",
    "Intake",
    "Job",
    "JobIntake",
    "JobQueue",
    "Leftovers",
    "MarketData",
    "Measure",
    "Metrics",
    "MoneyIndex",
    "NoMetrics",
    "Notifier",
    "OfferingSearch",
    "Order",
    "Poster",
    "PriceCache",
    "PurchaseError",
    "PurchaseProblem",
    "Purchaser",
    "RateLimited",
    "Refused",
    "Requests",
    "Resource",
    "SearchRefused",
    "SearchThrottled",
    "Store",
    "StoreCounts",
    "Target",
    "Uncertain",
    "UsageMeter",
    "UsageSamples",
    "VersionConflict",
    "WatchStore",
    "WatchesFull",
]
