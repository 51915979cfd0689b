"""The bot wired for the console: the real Bolt app, listeners and services, talking to a
local Slack Web API and response_url server; AWS is the sandbox market and the store is
`memory://`, both on a manual clock that only `clock +2h` moves.

Requests go into the app in-process (`App.dispatch`), the way Bolt's own adapters hand
them over, so the ack comes back as a value. What the app sends back goes over real HTTP
to the local server (Bolt's `respond` and `WebClient` speak nothing else), which records
it for the screen.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from slack_bolt import App, BoltRequest

from aws_sandbox import SandboxMarket
from aws_sandbox.redis_store import StoredClock
from bot.adapters.aws.accounts import SandboxAccounts
from bot.adapters.slack.local_api import Call, LocalSlackApi
from bot.adapters.store import open_store
from bot.app import DEFAULT_APPROVAL_CHANNEL, Wiring, build_app, build_services
from bot.config import Settings, load_settings
from bot.services.delivery import PACE_SECONDS
from bot.shell.payloads import Body
from bot.shell.people import DEFAULT_APPROVERS
from bot.worker import Worker

log = logging.getLogger(__name__)
COMMAND_CHANNEL = ("C0GENERAL", "general")  # where slash commands are typed
SETTLE_TIMEOUT = 30.0  # seconds to wait for the work a request started after its ack
# Catching up on paced posts moves the sandbox clock a second at a time; a job that kept
# asking for one more second would otherwise hold the prompt for ever.
MAX_CATCH_UPS = 100


@dataclass(frozen=True)
class Ack:
    """The app's HTTP answer to one request: status and body as JSON ({} when empty)."""

    status: int
    body: dict[str, Any]


def shell_settings() -> Settings:
    """The environment's settings, with Slack and AWS pinned to local stand-ins: a shell
    never talks to a workspace or buys real capacity. REDIS_URL is honoured (default
    memory://), so a scripted run can be inspected afterwards with `gpu-bot requests`.
    Without configured approvers, alice and bob approve."""
    settings = load_settings(
        SLACK_BOT_TOKEN=None,
        SLACK_SIGNING_SECRET=None,
        SLACK_APP_TOKEN=None,
        GPU_BOT_AWS="sandbox",
    )
    if not settings.approvers and not settings.approver_group:
        settings = settings.model_copy(update={"approvers": [p.id for p in DEFAULT_APPROVERS]})
    return settings


class ConsoleSlack:
    def __init__(self, settings: Settings) -> None:
        self.api = LocalSlackApi()
        if settings.approver_group:
            # The local workspace's approver group is alice and bob.
            self.api.groups[settings.approver_group] = [p.id for p in DEFAULT_APPROVERS]
        self.settings = settings.model_copy(update={"slack_api_url": self.api.api_url})
        store = open_store(self.settings.redis_url, self.settings.namespace)
        # The sandbox's time lives in the store: another process on the same Redis (a
        # second shell, `gpu-bot reservations`) sees the same moment.
        self.clock = StoredClock(store.redis, self.settings.namespace)
        self.services: Wiring = build_services(self.settings, clock=self.clock, store=store)
        self.app: App = build_app(self.services, request_verification=False)
        self.worker = Worker(self.services)
        # As a worker does at start: the monthly spend summary is due on the next 1st of
        # the sandbox's clock, so `clock` across it posts the month (the outlook scan is
        # left to `days`, which runs it).
        self.services.spend_summary.seed()
        self._seen = len(self.api.calls)
        self._ids = itertools.count(1)

    @property
    def approval_channel(self) -> str:
        return self.settings.approval_channel or DEFAULT_APPROVAL_CHANNEL

    def response_url(self) -> tuple[str, str]:
        """(token, URL) of a fresh response_url."""
        token = f"r{next(self._ids)}"
        return token, self.api.response_url(token)

    def trigger_id(self) -> str:
        return f"shell.trigger.{next(self._ids)}"

    def dispatch(self, body: Body) -> Ack:
        text, content_type = body
        response = self.app.dispatch(
            BoltRequest(body=text, headers={"content-type": [content_type]})
        )
        raw = response.body or ""
        # Bolt answers ack(text=...) alone as plain text, anything richer as JSON.
        answer = json.loads(raw) if raw.startswith("{") else {"text": raw} if raw else {}
        return Ack(response.status, answer)

    def settle(self) -> list[Call]:
        """What the app sent since last time, once the work started after the acks and
        every job due now (quotes) are done: what `serve` and its worker would do."""
        self._wait_idle()
        rounds = 0
        while self.worker.drain() or (rounds < MAX_CATCH_UPS and self._catch_up_pacing()):
            rounds += 1
            self._wait_idle()
        calls = self.api.since(self._seen)
        self._seen += len(calls)
        return calls

    def _catch_up_pacing(self) -> bool:
        """Posts to one channel go out a second apart: whatever was held back for that
        (a card, a decision, an extension's news, a deployment's progress: any job that
        posts) goes out now, the sandbox clock moving on the second, as it would in
        Slack. Nothing else waits for less than a second, so nothing else is run early."""
        head = self.services.store.next_due()
        if head is None:
            return False
        _job_id, due = head
        wait = due - self.clock.now()
        if wait <= timedelta(0) or wait > timedelta(seconds=PACE_SECONDS):
            return False
        self.clock.advance(wait)
        return True

    def _wait_idle(self) -> None:
        if not self.services.after_ack.wait_idle(SETTLE_TIMEOUT):
            log.warning("still working after %.0f s: showing what arrived so far", SETTLE_TIMEOUT)

    def advance(self, delta: timedelta) -> datetime:
        return self.clock.advance(delta)

    def sandbox_market(self) -> SandboxMarket | None:
        """The default account's simulated market (None when AWS is live)."""
        accounts = self.services.accounts
        return accounts.market() if isinstance(accounts, SandboxAccounts) else None

    def run_due_jobs(self) -> int:
        """Run every job due at the current time (timeouts); how many ran."""
        return self.worker.drain()

    def close(self) -> None:
        self.services.close()
        self.api.close()
