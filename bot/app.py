"""The composition root: settings -> adapters -> services -> listeners.

Only entry points (the CLI, the shell, tests) import this module; everything else gets
what it needs handed in, so no layer depends on the choice of adapters made here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.middleware import Middleware
from slack_sdk import WebClient

from bot.adapters.aws.accounts import AccountClients, SandboxAccounts, live_accounts
from bot.adapters.aws.accounts_market import AccountsMarket
from bot.adapters.aws.aftercare import AwsAftercare
from bot.adapters.aws.hosting import AwsHosting
from bot.adapters.aws.purchasing import AwsPurchaser
from bot.adapters.aws.usage import AwsUsage
from bot.adapters.aws.watch_search import AwsOfferingSearch
from bot.adapters.calls import set_call_observer
from bot.adapters.charts.outlook_png import render_outlook_apart
from bot.adapters.charts.png import charts_installed, render_png_apart
from bot.adapters.clock import SystemClock
from bot.adapters.metrics.prometheus import PrometheusMetrics
from bot.adapters.metrics.prometheus import render as render_metrics
from bot.adapters.slack.client import counted, make_web_client
from bot.adapters.slack.groups import SlackGroupDirectory
from bot.adapters.slack.notifier import SlackNotifier
from bot.adapters.slack.poster import SlackPoster, once_only_client
from bot.adapters.store import RedisStore, open_store
from bot.adapters.store.deployments import RedisDeployments
from bot.adapters.store.watches import RedisWatches
from bot.after_ack import AfterAck
from bot.config import Settings
from bot.domain.approval import SpendingPolicy
from bot.domain.catalog import Catalog, default_catalog
from bot.domain.outlook_scan import parse_scan_shapes
from bot.domain.records import DEFAULT_ACCOUNT
from bot.front import answer_store_down
from bot.logs import start_fields as start_log_fields
from bot.services.approvals import ApprovalService
from bot.services.approvers import ApproverDirectory
from bot.services.changes import RequestChanges
from bot.services.container import Services
from bot.services.delivery import OnceOnly
from bot.services.deploying import DeployService
from bot.services.extensions import ExtensionService
from bot.services.jobs import (
    NOTIFY,
    OPEN,
    PURCHASE,
    QUOTE,
    QUOTE_ONLY,
    TIMEOUT,
    TRACK,
    JobRegistry,
)
from bot.services.notifications import NotificationService
from bot.services.outlook import Draw, OutlookService
from bot.services.outlook_scan import OutlookScan
from bot.services.ports import Clock, MarketData, Notifier, Purchaser
from bot.services.ports.charts import ChartRenderer
from bot.services.purchasing import PurchaseService
from bot.services.quote_jobs import QuoteJobs
from bot.services.quoting import QuoteService
from bot.services.reactions import Reactions
from bot.services.reminders import ReminderService
from bot.services.replies import Replies
from bot.services.request_queries import RequestQueries
from bot.services.requests import RequestService
from bot.services.spend_summary import SpendSummary
from bot.services.spending import SpendLedger
from bot.services.submissions import SubmissionRules
from bot.services.usage import UsageService
from bot.services.watch_rounds import WatchRounds
from bot.services.watching import WatchService
from handlers import register

log = logging.getLogger(__name__)
# Where approval cards go when no channel is configured (the shell uses it).
DEFAULT_APPROVAL_CHANNEL = "CGPUAPPROVALS"
# How long the intake waits after a first request before writing: the ack goes out
# first, and under load more requests share the round trip. Nobody waits on it.
INTAKE_LINGER = 0.02


@dataclass
class Wiring(Services):
    """The services, plus the adapters behind them that only entry points may touch
    (listeners and the worker are typed against `Services` and never see these)."""

    store: RedisStore
    slack: WebClient
    notifier: Notifier
    accounts: AccountClients
    watch_search: AwsOfferingSearch  # counts the rounds' AWS calls


def build_services(
    settings: Settings,
    *,
    clock: Clock | None = None,
    store: RedisStore | None = None,
    market: MarketData | None = None,
    slack: WebClient | None = None,
    notifier: Notifier | None = None,
    accounts: AccountClients | None = None,
    purchaser: Purchaser | None = None,
    chart_renderer: ChartRenderer | None = render_png_apart,
    outlook_renderer: Draw = render_outlook_apart,
) -> Wiring:
    """`accounts`: the AWS clients of each account and region (default: live or sandbox
    by settings), shared by every flow so that what one buys, the others see.
    `chart_renderer` draws the cost chart (default: in a child process, so no bot process
    ever imports matplotlib; None, or matplotlib not installed: no chart), and
    `outlook_renderer` the outlook's.

    In three steps: the adapters, the request's flow up to the purchase, and what follows
    it (reminders, extensions, deployments, spend, watches)."""
    base = _adapters(settings, clock, store, accounts, slack, chart_renderer)
    if chart_renderer is not None and base.chart_renderer is None:
        outlook_renderer = None  # matplotlib is not installed
    if market is None:
        market = AccountsMarket(
            base.accounts,
            base.catalog,
            base.store,
            settings.price_cache_ttl,
            settings.aws_region,
        )
    notifier = notifier or SlackNotifier(base.slack, base.limits)
    flow = _request_flow(settings, base, market, notifier, outlook_renderer)
    purchaser = purchaser or AwsPurchaser(base.accounts, base.catalog, base.clock)
    return _after_the_purchase(settings, base, flow, purchaser, notifier)


@dataclass
class _Adapters:
    """What every flow shares: the clock, the store, AWS, Slack, the once-only poster."""

    clock: Clock
    catalog: Catalog
    store: RedisStore
    metrics: PrometheusMetrics
    accounts: AccountClients
    slack: WebClient
    limits: SpendingPolicy
    after_ack: AfterAck
    once: OnceOnly
    approval_channel: str
    chart_renderer: ChartRenderer | None


def _adapters(
    settings: Settings,
    clock: Clock | None,
    store: RedisStore | None,
    accounts: AccountClients | None,
    slack: WebClient | None,
    chart_renderer: ChartRenderer | None,
) -> _Adapters:
    clock = clock or SystemClock()
    store = store or open_store(settings.redis_url, settings.namespace)
    metrics = PrometheusMetrics()
    set_call_observer(metrics.external_call)
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    slack = slack or make_web_client(token, settings.slack_api_url)
    timeout = max(1, round(settings.slack_timeout.total_seconds()))
    poster = SlackPoster(once_only_client(token, str(slack.base_url), timeout))
    if chart_renderer is render_png_apart and not charts_installed():
        log.warning("cost charts are off: matplotlib is not installed (gpu-bot[charts])")
        chart_renderer = None
    return _Adapters(
        clock=clock,
        catalog=default_catalog(),
        store=store,
        metrics=metrics,
        accounts=accounts or make_accounts(settings, clock, store),
        slack=slack,
        limits=SpendingPolicy(settings.second_approval_usd, settings.max_request_usd),
        after_ack=AfterAck(on_depth=metrics.after_ack_depth),
        once=OnceOnly(store, poster, clock, settle=settings.delivery_settle, files=poster),
        approval_channel=settings.approval_channel or DEFAULT_APPROVAL_CHANNEL,
        chart_renderer=chart_renderer,
    )


@dataclass
class _RequestFlow:
    """From `/gpu reserve` to the decision: quotes, requests, the card, the approvers."""

    quotes: QuoteService
    changes: RequestChanges
    ledger: SpendLedger
    requests: RequestService
    submissions: SubmissionRules
    notifications: NotificationService
    approvals: ApprovalService
    jobs: JobRegistry
    outlook: OutlookService


def _outlook(s: Settings, base: _Adapters, market: MarketData, draw: Draw) -> OutlookService:
    """What the offering searches saw, remembered; its chart drawn as the cost chart is."""
    store, regions = base.store, market.regions()
    found = OutlookService(store, base.catalog, base.clock, s.outlook_days, s.aws_region, regions)
    found.charts_to(store, base.once, draw)
    return found


def _request_flow(
    settings: Settings, base: _Adapters, market: MarketData, notifier: Notifier, draw: Draw
) -> _RequestFlow:
    clock, store = base.clock, base.store
    outlook = _outlook(settings, base, market, draw)
    quotes = QuoteService(
        market,
        base.catalog,
        clock,
        settings.aws_region,
        accounts=account_names(settings),
        limits=base.limits,
        record=outlook.record,
    )
    groups = SlackGroupDirectory(base.slack)
    directory = ApproverDirectory(settings.approvers, settings.approver_group, groups, cache=store)
    submissions = SubmissionRules(base.limits, clock, settings.approval_timeout)
    # New requests and quotes asked for are stored by one thread, many per round trip.
    intake = base.after_ack.lane(store.schedule_once, "intake", linger=INTAKE_LINGER)
    reactions = Reactions(
        clock.now,
        before_start=settings.remind_before_start,
        before_end=settings.remind_before_expiry,
        charts=base.chart_renderer is not None,
        metrics=base.metrics,
        already_sent=base.once.begun,
    )
    changes = RequestChanges(store, reactions, clock.now)
    ledger = SpendLedger(
        store,
        settings.teams,
        settings.budgets,
        settings.over_budget,
        groups=groups,
        now=clock.now,
    )
    requests = RequestService(changes, submissions, clock, base.limits, intake, ledger)
    quote_jobs = QuoteJobs(changes, quotes, notifier, clock, ledger, outlook.note_for)
    notifications = NotificationService(
        changes, base.once, clock, base.approval_channel, base.chart_renderer
    )
    jobs = JobRegistry()
    notifications.register(jobs)
    outlook.register(jobs)
    jobs.register(OPEN, quote_jobs.unless_unsold(requests.create_draft))
    jobs.register(QUOTE, quote_jobs.run_quote)
    jobs.register(QUOTE_ONLY, quote_jobs.run_quote_only)
    jobs.register(NOTIFY, lambda job: notifications.deliver(job.request))
    jobs.register(TIMEOUT, lambda job: requests.time_out(job.request))
    approvals = ApprovalService(changes, directory, clock, ledger)
    return _RequestFlow(
        quotes, changes, ledger, requests, submissions, notifications, approvals, jobs, outlook
    )


@dataclass
class _Tracking:
    """What follows the purchase of a request: tracking, reminders, extensions, endpoints."""

    purchases: PurchaseService
    reminders: ReminderService
    extensions: ExtensionService
    deploys: DeployService


def _tracking(
    settings: Settings, base: _Adapters, flow: _RequestFlow, purchaser: Purchaser
) -> _Tracking:
    clock, jobs, changes, once = base.clock, flow.jobs, flow.changes, base.once
    aftercare = AwsAftercare(base.accounts, base.catalog, clock)
    reminders = ReminderService(
        changes,
        once,
        clock,
        before_start=settings.remind_before_start,
        before_end=settings.remind_before_expiry,
        approval_channel=base.approval_channel,
        extensions=aftercare,
        leftovers=aftercare,
        limits=base.limits,
    )
    reminders.register(jobs)
    extensions = ExtensionService(
        changes, aftercare, once, clock, base.approval_channel, base.limits, flow.ledger
    )
    extensions.register(jobs)
    purchases = PurchaseService(
        changes,
        purchaser,
        flow.quotes,
        clock,
        settings.namespace,
        settings.default_account,
        block_regions=(settings.aws_region, *base.catalog.capacity_block_regions()),
    )
    jobs.register(PURCHASE, lambda job: purchases.run_purchase(job.request))
    jobs.register(TRACK, lambda job: purchases.run_track(job.request))
    deploys = DeployService(
        changes,
        RedisDeployments(base.store),
        AwsHosting(base.accounts),
        once,
        base.catalog,
        clock,
        settings.namespace,
        approval_channel=base.approval_channel,
        warn_before_end=settings.remind_before_expiry,
    )
    deploys.register(jobs)
    return _Tracking(purchases, reminders, extensions, deploys)


def _usage(settings: Settings, base: _Adapters, flow: _RequestFlow) -> UsageService:
    """Sampling what runs on each live reservation, its idle alerts and report card."""
    usage = UsageService(
        flow.changes,
        AwsUsage(base.accounts),
        base.store,
        base.once,
        base.catalog,
        base.clock,
        approval_channel=base.approval_channel,
        idle_alert=settings.idle_alert,
    )
    usage.register(flow.jobs)
    return usage


def _after_the_purchase(
    settings: Settings,
    base: _Adapters,
    flow: _RequestFlow,
    purchaser: Purchaser,
    notifier: Notifier,
) -> Wiring:
    clock, store, jobs, once = base.clock, base.store, flow.jobs, base.once
    after = _tracking(settings, base, flow, purchaser)
    summary = SpendSummary(
        flow.ledger, store, once, clock, base.approval_channel, after.deploys.of_request
    )
    summary.register(jobs)
    approver, limits = flow.approvals.is_approver, settings.watch_limits
    watches = WatchService(RedisWatches(store), flow.quotes, base.catalog, clock, approver, limits)
    search = AwsOfferingSearch(base.accounts.clients)
    rounds = WatchRounds(watches, search, flow.changes, flow.requests, once, clock, base.limits)
    rounds.register(jobs)
    shapes = parse_scan_shapes(settings.outlook_shapes, base.catalog, clock.now())
    scan = OutlookScan(shapes, search, flow.outlook, base.catalog, clock, store)
    scan.register(jobs)
    usage = _usage(settings, base, flow)
    return Wiring(
        settings=settings,
        clock=clock,
        store=store,
        catalog=base.catalog,
        quotes=flow.quotes,
        queries=RequestQueries(store),
        requests=flow.requests,
        submissions=flow.submissions,
        approvals=flow.approvals,
        changes=flow.changes,
        purchases=after.purchases,
        notifications=flow.notifications,
        replies=Replies(notifier),
        jobs=jobs,
        reminders=after.reminders,
        extensions=after.extensions,
        deploys=after.deploys,
        spending=flow.ledger,
        spend_summary=summary,
        usage=usage,
        after_ack=base.after_ack,
        metrics=base.metrics,
        watches=watches,
        outlook=flow.outlook,
        outlook_scan=scan,
        slack=base.slack,
        notifier=notifier,
        accounts=base.accounts,
        watch_search=search,
    )


def account_names(settings: Settings) -> list[str]:
    """The accounts a request may name, the one it runs in without `account=` first."""
    names = dict.fromkeys([settings.default_account, DEFAULT_ACCOUNT, *settings.accounts])
    return list(names)


def metrics_page(services: Wiring) -> Callable[[], tuple[bytes, str]]:
    """The /metrics page: this process's (or every worker process's) counters and the
    store's counts now."""
    store, clock = services.store, services.clock
    return lambda: render_metrics(lambda: store.counts(clock.now()))


def make_accounts(settings: Settings, clock: Clock, store: RedisStore) -> AccountClients:
    """Clients per account: the sandbox keeps its purchases in the bot's own store."""
    if settings.sandbox:
        namespace = store.prefix.strip("{}")  # beside the bot's own keys, whatever they are
        return SandboxAccounts(
            settings.accounts, settings.default_account, clock, store.redis, namespace
        )
    return live_accounts(settings.accounts, settings.default_account, clock)


def build_app(
    services: Wiring,
    *,
    request_verification: bool = True,
    token_verification: bool = True,
) -> App:
    """The Bolt app with every listener registered.

    `process_before_response=True`: Bolt answers Slack when the listener returns, so
    listeners ack and return at once, handing slow work to `services.after_ack` or to
    a job (Bolt's default runner would instead poll for the ack every 10 ms).
    """
    settings = services.settings
    secret = settings.slack_signing_secret
    kwargs: dict[str, Any] = {}
    if settings.slack_bot_token is None:
        # No workspace (the shell, tests): authorize every request as one local bot.
        kwargs["authorize"] = _local_authorize
    else:
        # The bot token comes with `client` (built from SLACK_BOT_TOKEN, with retries).
        kwargs["token_verification_enabled"] = token_verification
    app = App(
        # Named, or Bolt names it after its caller's file with inspect.stack(), which reads
        # the source of every frame: about 40 ms for each app built.
        name="gpu-bot",
        client=services.slack,
        signing_secret=secret.get_secret_value() if secret else "local-signing-secret",
        process_before_response=True,
        request_verification_enabled=request_verification,
        **kwargs,
    )
    app.use(_RequestScope())
    app.error(answer_store_down)
    register(app, services)
    return app


_REQUEST_ID = re.compile(r"\bR[0-9]+\b")


def _log_fields(body: dict[str, Any]) -> None:
    """The Slack user and, when the payload names one, the request id go on every log
    line of this request (bot.logs), in the listener and the work it hands off; a request
    created meanwhile is bound when saved."""
    user = body.get("user_id") or (body.get("user") or {}).get("id")
    named = " ".join(
        [str(body.get("text", ""))]
        + [str(a.get("value", "")) for a in body.get("actions") or [] if isinstance(a, dict)]
        + [str((body.get("view") or {}).get("private_metadata", ""))]
    )
    found = _REQUEST_ID.search(named)
    start_log_fields(slack_user=user, request_id=found.group(0) if found else None)


class _RequestScope(Middleware):
    """Per request, before the listeners: the listeners' Slack calls are counted too
    (Bolt makes a plain client per request) and the log fields are bound (`_log_fields`).
    A `Middleware` subclass, not a function: Bolt calls it directly, without working out
    a function's keyword arguments on every request."""

    def process(
        self, *, req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
    ) -> BoltResponse | None:
        req.context["client"] = counted(req.context.client)
        _log_fields(req.body)
        return next()


def _local_authorize(**_: Any) -> AuthorizeResult:
    return AuthorizeResult(
        enterprise_id=None,
        team_id="TLOCAL",
        bot_user_id="UGPUBOT",
        bot_id="BGPUBOT",
        bot_token="xoxb-local",  # noqa: S106 - no workspace: nothing to protect
    )
