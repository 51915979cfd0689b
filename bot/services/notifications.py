"""Telling people, as jobs after the state change (an outbox).

Every change that people should see schedules `notify:<request id>` in the same
compare-and-set as the change. That job only fans out: each recipient's message is its
own job and its own once-only delivery (bot/services/delivery.py), so a slow, refused or
rate-limited post to one never holds up another:

- `card:<id>` posts the approval card once (or updates it in place), rendering the
  request as it is *now*, so updates converge on the latest state whatever their order;
- `tell:<id>:<state>:<attempt>` tells the requester of a decision, once per outcome;
- `chart:<id>`, scheduled in the same step that records the posted card, draws the quote's
  cost chart (bot/domain/cost_chart.py) and shares it into the card's thread, once. A chart
  Slack refuses (no `files:write` scope, bot not in the channel) is logged and audited and
  not tried again: the card and the decision never wait for it.

A card Slack refuses for good (archived channel, bot not in it, blocks refused) is
logged for the operator, noted in the audit trail, and the requester is told by DM.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.deploy import deploy_button, deployable
from bot.blocks.elements import context, section
from bot.blocks.quote import quote_blocks
from bot.blocks.requests import card_fallback, request_card, requester_update
from bot.blocks.text import esc
from bot.domain import events as on
from bot.domain.cost_chart import cost_chart
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, SlackMessage
from bot.domain.reminders import request_window
from bot.domain.transitions import card_posted
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.delivery import OnceOnly, filename_of
from bot.services.jobs import JobKind, JobRegistry, RequestJob, Retries
from bot.services.ports import ChartRenderer, Clock, FileToShare, Job, Refused

log = logging.getLogger(__name__)

# Outcomes of an approval: the requester hears of each by direct message, once.
APPROVAL_OUTCOMES = frozenset(
    {
        State.APPROVED,
        State.REJECTED,
        State.TIMED_OUT,
        State.PAYMENT_PENDING,
        State.SCHEDULED,
        State.ACTIVE,
        State.EXPIRED,
        State.FAILED,
        State.PURCHASE_UNKNOWN,
    }
)
# Tracked capacity: the reminders tell the requester it is delivered (with how to use it)
# and that it ended (with what is left to clean up); a decision message would say it twice.
TOLD_BY_REMINDERS = frozenset({State.ACTIVE, State.EXPIRED})
# States before the request was submitted: it has no approval card.
BEFORE_SUBMISSION = frozenset({State.DRAFT, State.QUOTED, State.FAILED})


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TellJob(_Payload):
    """Tell the requester that the request reached `state` (on purchase attempt
    `attempts`: a request re-quoted and approved again is told again)."""

    request: str
    state: State
    attempts: int


class CardRefusedJob(_Payload):
    """Tell the requester that Slack refused their approval card."""

    request: str
    channel: str
    error: str


class StrayCardJob(_Payload):
    """Take the buttons off a copy of the request's card that the bot did not record."""

    request: str
    channel: str
    ts: str


CARD = JobKind("card", RequestJob)
TELL = JobKind("tell", TellJob)
CARD_REFUSED = JobKind("card-refused", CardRefusedJob)
STRAY_CARD = JobKind("stray-card", StrayCardJob)
# A chart only draws numbers the card already shows: a few tries, then the card stands
# without it rather than an hour of retries.
CHART = JobKind("chart", RequestJob, Retries(attempts=3))
KINDS = (CARD, TELL, CARD_REFUSED, STRAY_CARD, CHART)
STRAY_NOTE = (
    ":information_source: A copy of this request's card that the bot lost track of: "
    "its buttons are gone. Decide on the current card, or from the bot's Home tab."
)


def card_key(request_id: str) -> str:
    return f"card:{request_id}"


def chart_key(request_id: str) -> str:
    return f"chart:{request_id}"


def told_key(request_id: str, state: State, attempts: int) -> str:
    return f"told:{request_id}:{state.value}:{attempts}"


class NotificationService:
    def __init__(
        self,
        changes: RequestChanges,
        delivery: OnceOnly,
        clock: Clock,
        approval_channel: str,
        charts: ChartRenderer | None = None,
    ) -> None:
        """`charts`: draws the cost chart shared beside each new card (None: no chart;
        the reactions' `charts` says whether a card's posting asks for one)."""
        self.changes = changes
        self.store = changes.store
        self.delivery = delivery
        self.clock = clock
        self.approval_channel = approval_channel
        self.charts = charts

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(CARD, lambda job: self.show_card(job.request))
        jobs.register(TELL, self.tell)
        jobs.register(CARD_REFUSED, self.tell_card_refused)
        jobs.register(STRAY_CARD, self.strip_stray_card)
        jobs.register(CHART, lambda job: self.share_chart(job.request))

    # --- the notify job: one job per recipient ------------------------------------------

    def deliver(self, request_id: str) -> None:
        record = self.store.get(request_id)
        if record is None:
            return
        now = self.clock.now()
        jobs: list[Job] = []
        submitted = record.state not in BEFORE_SUBMISSION and record.state is not State.CANCELLED
        if record.approval_message is not None or submitted:
            jobs.append(CARD.job(record.id, now, RequestJob(request=record.id)))
        told = tell_job(record, now)
        # `delivered`: told before deliveries were once-only (kept for records of then).
        key = told_key(record.id, record.state, len(record.attempts))
        if told is not None and not self.store.delivered(key):
            jobs.append(told)
        if jobs:
            self.store.schedule_many(jobs)
            self.store.wake()

    # --- the approval card ---------------------------------------------------------------

    def show_card(self, request_id: str) -> None:
        """Post the card once, or update it to the request as it is now."""
        record = self.store.get(request_id)
        if record is None:
            return
        if record.approval_message is None:
            if record.state in BEFORE_SUBMISSION or record.state is State.CANCELLED:
                return  # never submitted (or cancelled before): nothing to show
            blocks = request_card(record)
            key = card_key(record.id)
            try:
                posted = self.delivery.send(
                    key, self.approval_channel, card_fallback(record), blocks
                )
            except Refused as refused:
                if not refused.lasting:
                    raise  # the app's own setup (token, scopes): retried, then dead letters
                self._card_refused(record, refused.error)
                return
            # None: posted by an earlier run (found after an uncertain outcome), showing
            # the request as it was then: it is updated below.
            message = posted or self.delivery.sent(key)
            if message is None:
                return
            saved = self._remember_card(record.id, message)
            if saved is None or (posted is not None and request_card(saved) == blocks):
                return
            record = saved  # decided since the card was rendered
        self._update_card(record)

    def clicked_card(self, request_id: str, channel: str, ts: str) -> None:
        """A button was clicked on a card at `channel`/`ts`: if that is not the card the
        bot recorded (a duplicate posted after an answer that was lost), take its buttons
        off, as a job."""
        record = self.store.get(request_id)
        if record is None or record.approval_message == SlackMessage(channel=channel, ts=ts):
            return
        payload = StrayCardJob(request=request_id, channel=channel, ts=ts)
        self.store.schedule(STRAY_CARD.job(f"{channel}:{ts}", self.clock.now(), payload))
        self.store.wake()

    def strip_stray_card(self, job: StrayCardJob) -> None:
        record = self.store.get(job.request)
        stray = SlackMessage(channel=job.channel, ts=job.ts)
        if record is None or record.approval_message == stray:
            return  # found and recorded meanwhile: the card job keeps it current
        blocks = request_card(record, with_buttons=False)
        blocks.append(context(STRAY_NOTE))
        try:
            self.delivery.update(stray, card_fallback(record), blocks)
        except Refused as refused:
            if not refused.lasting:
                raise
            log.warning("a stray card of %s could not be changed: %s", record.id, refused.error)

    # --- the cost chart, in the card's thread ----------------------------------------------

    def share_chart(self, request_id: str) -> None:
        """Draw the request's cost chart and share it into its card's thread, once."""
        record = self.store.get(request_id)
        render = self.charts
        if record is None or render is None or record.quote is None:
            return
        card = record.approval_message
        if card is None:
            return  # scheduled only once the card is recorded; nothing to answer under
        quote = record.quote
        key = chart_key(record.id)

        def png() -> FileToShare:
            title = f"{record.id}: total cost by expected utilisation"
            return FileToShare(filename_of(key), title, render(cost_chart(quote)))

        try:
            self.delivery.share_file(key, card.channel, card.ts, png)
        except Refused as refused:
            # Not retried: a scope or a channel is mended by a person, and the card and
            # the decision do not need the picture.
            log.error(
                "the cost chart of %s could not be shared in %s (%s)%s",
                record.id,
                card.channel,
                refused.error,
                ": add the files:write scope and reinstall the app"
                if refused.error == "missing_scope"
                else "",
            )
            detail = f"{card.channel}: {refused.error}"

            self.changes.note(record.id, "chart-refused", detail)

    def _remember_card(self, request_id: str, message: SlackMessage) -> CapacityRecord | None:
        def posted(r: CapacityRecord) -> Change | None:
            detail = f"{message.channel} {message.ts}"
            return Change.of(card_posted(r, message), "posted", BOT, detail)

        saved, _ = self.changes.apply(request_id, posted)
        return saved

    def _update_card(self, record: CapacityRecord) -> None:
        message = record.approval_message
        if message is None:
            return
        try:
            self.delivery.update(message, card_fallback(record), request_card(record))
        except Refused as refused:
            if not refused.lasting:
                raise
            # Deleted, archived, or refused: the requester is told by their own job, and
            # /gpu status still shows the request.
            log.error(
                "the approval card of %s in %s cannot be updated (%s): fix the channel",
                record.id,
                message.channel,
                refused.error,
            )

    def _card_refused(self, record: CapacityRecord, error: str) -> None:
        log.error(
            "the approval card of %s could not be posted to %s (%s): fix the approval channel",
            record.id,
            self.approval_channel,
            error,
        )
        refused = on.CardRefused(self.approval_channel, error)

        def noted(r: CapacityRecord) -> Change:
            return Change(r, refused, "card-refused", BOT, f"{self.approval_channel}: {error}")

        self.changes.apply(record.id, noted)

    def tell_card_refused(self, job: CardRefusedJob) -> None:
        record = self.store.get(job.request)
        if record is None:
            return
        text = (
            f":warning: Your GPU request *{record.id}* could not be shown to the approvers: "
            f"Slack refused the card in <#{esc(job.channel)}> (`{esc(job.error)}`). "
            "Approvers can still decide from the bot's Home tab; the bot's operator has "
            "been told to fix the channel."
        )
        self._dm(f"card-refused:{record.id}", record.requester, text, [])

    # --- the requester -------------------------------------------------------------------

    def tell(self, job: TellJob) -> None:
        record = self.store.get(job.request)
        if record is None:
            return
        key = told_key(record.id, job.state, job.attempts)
        moved_on = record.state is not job.state
        if moved_on and job.state is State.QUOTED and not self.delivery.begun(key):
            return  # resubmitted already: that new quote's buttons would be stale
        if moved_on:
            record = record.model_copy(update={"state": job.state})  # told as it happened
        text = requester_update(record)
        head = section(text)
        blocks: list[dict[str, Any]] = []
        if record.state is State.QUOTED and record.quote is not None:
            # Not bought (the offering moved, AWS refused): the new quote, to submit again.
            blocks = [head, *quote_blocks(record.quote, record.id)]
        elif deployable(record):
            blocks = [head, deploy_button(record)]
        self._dm(key, record.requester, text, blocks)

    def _dm(self, key: str, user: str, text: str, blocks: list[dict[str, Any]]) -> None:
        try:
            self.delivery.send(key, user, text, blocks)
        except Refused as refused:
            if not refused.lasting:
                raise
            log.error("could not tell %s (%s): Slack refused the DM: %s", user, key, refused.error)


def tell_job(record: CapacityRecord, now: datetime) -> Job | None:
    """The requester's message of the state `record` is in, when it is one they are told
    of. Scheduled with the change itself (bot/services/reactions.py), so a state the
    request leaves before the notify job reads it (approved, then payment pending at
    once) is still told, as it was."""
    if not (_told_here(record) or (record.state is State.QUOTED and bool(record.failure))):
        return None
    told = told_key(record.id, record.state, len(record.attempts))
    payload = TellJob(request=record.id, state=record.state, attempts=len(record.attempts))
    return TELL.job(told.removeprefix("told:"), now, payload)


def _told_here(record: CapacityRecord) -> bool:
    """Whether the decision messages tell the requester of the record's state (else no
    one does, or the reminders do)."""
    if record.state in TOLD_BY_REMINDERS and record.reservation is not None:
        return False
    if record.state is State.EXPIRED and request_window(record) is not None:
        return False  # On-Demand or Spot: the cleanup prompt (or "cleaned up") says it
    return record.state in APPROVAL_OUTCOMES
