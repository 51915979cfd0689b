"""The bot under test: the real Bolt app and services on a real Redis, served over HTTP
by a threaded WSGI server, with Slack's Web API faked by `FakeSlack`."""

from __future__ import annotations

import itertools
import logging
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import redis
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator

from aws_sandbox import SANDBOX_ACCOUNT_ID, SandboxMarket
from aws_sandbox.iam_guard import IamGuard
from aws_sandbox.redis_store import RedisMarketStore
from bot.adapters.aws.accounts import SandboxAccounts
from bot.adapters.aws.market import AwsClients, AwsMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.charts.png import PNG_MAGIC
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.app import Wiring, build_app, build_services, metrics_page
from bot.blocks.ids import ActionId
from bot.config import Settings
from bot.domain.cost_chart import CostChart
from bot.domain.outlook import OutlookChart
from bot.domain.records import CapacityRecord
from bot.server import wsgi_app
from bot.services.actor import Actor
from bot.services.delivery import PACE_SECONDS
from bot.services.extensions import KINDS as EXTENSION_KINDS
from bot.services.notifications import KINDS as NOTIFICATION_KINDS
from bot.services.ports.charts import ChartRenderer
from bot.services.usage import KINDS as USAGE_KINDS
from bot.worker import Worker
from handlers.commands import answered_in_ack
from tests import slack_payloads as payloads
from tests.iam_sandbox import SHIPPED_IAM
from tests.slack_fake import FakeSlack

SECRET = "test-signing-secret"
REQUESTER = "U0REQUESTER"
APPROVER = "U0APPROVER"
APPROVER_2 = "U0APPROVER2"
GROUP_APPROVER = "U0GROUPAPPROVER"
OUTSIDER = "U0OUTSIDER"
APPROVAL_CHANNEL = "C0APPROVALS"
# Cards and messages whose pacing behind another post to the channel the harness catches
# up on (an idle alert and an extension card can go to the approval channel together).
PACED_KINDS = {kind.name for kind in (*NOTIFICATION_KINDS, *EXTENSION_KINDS, *USAGE_KINDS)}


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when twenty clicks arrive at
    # once on a busy machine; Slack's own front would queue them.
    request_queue_size = 128


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass
class Reply:
    status: int
    body: str


class _Crashes(logging.Handler):
    """Exceptions the bot logged with a traceback (a job or after-ack work that raised)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.seen.append(record)

    def report(self) -> str:
        return "\n\n".join(self.format(r) for r in self.seen)


class BotUnderTest:
    def __init__(
        self,
        fake: FakeSlack,
        store: RedisStore,
        clock: ManualClock,
        charts: ChartRenderer | None = None,
        aws_redis: redis.Redis | None = None,
        iam: IamGuard | None = SHIPPED_IAM,
        **settings: Any,
    ) -> None:
        """`charts` draws the cost chart; by default a canned PNG, at once (the chart
        tests bring the real renderer, which starts a child process). `aws_redis`: where
        the sandbox keeps what it sold, when not in the bot's Redis (a test that stops
        the bot's Redis keeps AWS running). `iam`: the policies the bot's role has in the
        sandbox, by default every one in deploy/; a call they would not allow is refused
        as AWS would. None: no IAM (a test must say why)."""
        self.fake = fake
        self.clock = clock
        self.crashes = _Crashes()
        self.crashes_expected = False
        self.invalid_expected = False
        logging.getLogger("bot").addHandler(self.crashes)
        config = {
            "slack_bot_token": "xoxb-test",
            "slack_signing_secret": SECRET,
            "slack_api_url": fake.api_url,
            "approvers": [APPROVER, APPROVER_2],
            "approval_channel": APPROVAL_CHANNEL,
        } | settings
        self.settings = Settings.model_validate(
            {
                Settings.model_fields[k].validation_alias.choices[0]: v  # type: ignore[union-attr]
                for k, v in config.items()
            }
        )
        # The market keeps its purchases in the test's Redis namespace, as `serve` does, so
        # two bots on one namespace see (and count) the same purchases.
        namespace = store.prefix.strip("{}")
        aws_redis = aws_redis or store.redis
        market_store = RedisMarketStore(aws_redis, namespace, scope=SANDBOX_ACCOUNT_ID)
        self.market = SandboxMarket(clock=clock, store=market_store, iam=iam)
        accounts = SandboxAccounts(
            self.settings.accounts,
            self.settings.default_account,
            clock,
            aws_redis,
            namespace,
            markets={SANDBOX_ACCOUNT_ID: self.market},
            iam=iam,
        )
        clients: dict[str, AwsClients] = {}

        def aws(region: str) -> AwsClients:
            if region not in clients:
                clients[region] = sandbox_clients(self.market, region)
            return clients[region]

        market = AwsMarket(aws, _catalog(), cache=store)
        self.aws = aws
        self.services: Wiring = build_services(
            self.settings,
            clock=clock,
            store=store,
            market=market,
            accounts=accounts,
            chart_renderer=charts or canned_chart,
            outlook_renderer=canned_outlook_chart,
        )
        # slack_sdk sleeps between its retries of a 5xx; the tests move the clock, so
        # those waits would only add real seconds.
        for handler in self.services.slack.retry_handlers:
            handler.interval_calculator = FixedValueRetryIntervalCalculator(0.0)
        # As `serve` runs it: the front verifies signatures, Bolt does not again.
        self.app = build_app(self.services, request_verification=False)
        self.worker = Worker(self.services)
        self.server = make_server(
            "127.0.0.1",
            0,
            wsgi_app(
                self.app,
                store.ping,
                self.services.after_ack,
                signing_secret=SECRET,
                first_sighting=store.first_sighting,
                metrics=metrics_page(self.services),
                answered_in_ack=answered_in_ack(self.services),
            ),
            server_class=_ThreadingWSGIServer,
            handler_class=_QuietHandler,
        )
        # socketserver notices shutdown() once per poll: its default half second was most
        # of the time of a short test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()
        self._tokens = itertools.count(1)
        # The harness's own reads, beside the bot's store (which tests may instrument).
        self._reader = RedisStore(store.redis, namespace=store.prefix.strip("{}"))

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/slack/events"

    def expect_crashes(self) -> None:
        """This test provokes failures after the ack or in jobs (Slack or Redis down):
        do not fail it for the tracebacks they log."""
        self.crashes_expected = True

    def expect_invalid(self) -> None:
        """This test sends what Slack refuses on purpose: do not fail it for that."""
        self.invalid_expected = True

    def close(self) -> None:
        logging.getLogger("bot").removeHandler(self.crashes)
        self.services.after_ack.wait_idle(10)
        self.server.shutdown()
        self.server.server_close()
        self.services.close()

    # --- sending ----------------------------------------------------------------------

    def post(
        self,
        body: str,
        content_type: str,
        *,
        signed: bool = True,
        timestamp: int | None = None,
        secret: str = SECRET,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        all_headers = {"Content-Type": content_type}
        if signed:
            all_headers |= payloads.sign(secret, body, timestamp)
        all_headers |= headers or {}
        request = urllib.request.Request(
            self.url, data=body.encode(), headers=all_headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Reply(response.status, response.read().decode())
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.read().decode())

    def scrape(self) -> str:
        """GET /metrics, as Prometheus would."""
        url = self.url.replace("/slack/events", "/metrics")
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
            return str(response.read().decode())

    def new_response_url(self) -> tuple[str, str]:
        token = f"r{next(self._tokens)}"
        return token, self.fake.response_url(token)

    def command(self, text: str, user: str = REQUESTER) -> tuple[Reply, str]:
        token, url = self.new_response_url()
        return self.post(*payloads.slash_command(text, user, url)), token

    def click(
        self,
        action_id: str,
        value: str,
        user: str,
        container: str = "message",
        message_ts: str | None = None,
        trigger_id: str = "T-2",
    ) -> tuple[Reply, str]:
        """A click on a message (by default the recorded card of the request `value`
        names, when it has one; `message_ts` another copy) or in App Home."""
        token, url = self.new_response_url()
        channel = APPROVAL_CHANNEL
        if message_ts is None:
            record = self._reader.get(value.split("|", 1)[0])
            card = record.approval_message if record else None
            message_ts, channel = (card.ts, card.channel) if card else ("1.0", channel)
        body = payloads.button_click(
            action_id,
            value,
            user,
            url if container == "message" else None,
            container,
            trigger_id=trigger_id,
            channel=channel,
            message_ts=message_ts,
        )
        return self.post(*body), token

    def approve(
        self,
        request_id: str,
        user: str,
        container: str = "message",
        message_ts: str | None = None,
        action_id: str = ActionId.APPROVE.value,
    ) -> tuple[Reply, str]:
        """Approve as an approver does: the button, then the confirmation with the amount
        that the bot opens for them (for someone it refuses it opens none). The reply and
        response token are the button's."""
        trigger = f"T-approve-{next(self._tokens)}"
        reply, token = self.click(action_id, request_id, user, container, message_ts, trigger)
        for view in self.opened(trigger):
            self.submit_view(view["callback_id"], {}, user, view.get("private_metadata", ""))
        return reply, token

    def opened(self, trigger_id: str) -> list[dict[str, Any]]:
        """The views the bot opened for the click with this trigger id, once the work
        after its ack is done."""
        assert self.services.after_ack.wait_idle(20), "background work did not finish"
        calls = self.fake.of("views.open")
        return [c.view() for c in calls if c.args.get("trigger_id") == trigger_id]

    def approval_form(self, request_id: str, user: str) -> dict[str, Any]:
        """The confirmation Approve opens for `user` (who must be allowed to approve)."""
        trigger = f"T-approve-{next(self._tokens)}"
        self.click(ActionId.APPROVE.value, request_id, user, trigger_id=trigger)
        (view,) = self.opened(trigger)
        return view

    def submit_view(
        self,
        callback_id: str,
        values: dict[str, dict[str, Any]],
        user: str,
        private_metadata: str = "",
        view_id: str = "V0MODAL",
    ) -> Reply:
        return self.post(
            *payloads.view_submission(callback_id, values, user, private_metadata, view_id)
        )

    def actor(self, user: str) -> Actor:
        """`user` as the middleware makes them for a service: the approver question asked
        of the bot's own directory."""
        return Actor(user, self.services.approvals.is_approver)

    def wait(self) -> None:
        """Until the work after each ack is done and no job is due (quotes run as jobs).
        A job or after-ack task that raised fails the test (unless `expect_crashes`): a
        crash would otherwise show only as a missing message."""
        assert self.services.after_ack.wait_idle(20), "background work did not finish"
        self.worker.drain()
        for _ in range(100):
            if not self._catch_up_pacing():
                break
            self.worker.drain()
        assert self.services.after_ack.wait_idle(20), "background work did not finish"
        if self.fake.invalid and not self.invalid_expected:
            refused = "\n".join(f"{c.method}: {c.answer}" for c in self.fake.invalid)
            raise AssertionError(f"Slack would refuse what the bot sent:\n{refused}")
        if self.crashes.seen and not self.crashes_expected:
            raise AssertionError(
                "work after the ack or a job raised (call bot.expect_crashes() in a test "
                "that provokes this on purpose):\n" + self.crashes.report()
            )

    def _catch_up_pacing(self) -> bool:
        """Posts to one channel go out a second apart (bot/services/delivery.py): when the
        next job is an approval card or a requester's message due within that, move the
        clock to it, as real time would. (Reminder tests move the clock themselves.)"""
        head = self.services.store.next_due()
        now = self.clock.now()
        if head is None:
            return False
        job_id, due = head
        paced = job_id.split(":", 1)[0] in PACED_KINDS
        if not paced or due <= now or due - now > timedelta(seconds=PACE_SECONDS):
            return False
        self.clock.set(due)
        return True

    # --- reading ----------------------------------------------------------------------

    def record(self, request_id: str) -> CapacityRecord:
        record = self.services.store.get(request_id)
        assert record is not None
        return record

    def purchase_calls(self) -> int:
        """Purchase calls the sandbox market saw, from any bot sharing this Redis."""
        return self.services.accounts.purchase_calls()  # type: ignore[attr-defined,no-any-return]

    def responses(self, token: str) -> list[dict[str, Any]]:
        return [c.args for c in self.fake.of("response_url") if c.token == token]


def canned_outlook_chart(chart: OutlookChart) -> bytes:
    """The outlook chart's stand-in: a PNG's magic number and its title."""
    return PNG_MAGIC + chart.title.encode()


def canned_chart(chart: CostChart) -> bytes:
    """A PNG's magic number and the chart's title: a chart to share, drawn in no time."""
    return PNG_MAGIC + chart.title.encode()


def _catalog():  # type: ignore[no-untyped-def]
    from bot.domain.catalog import default_catalog

    return default_catalog()
