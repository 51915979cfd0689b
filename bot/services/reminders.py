"""Reminders and cleanup prompts: scheduled with the change that calls for them, sent once.

The reminder jobs a change calls for (bought, delivered, dates moved, ended, cancelled)
are written in that same step, whichever flow made the change (bot/services/reactions.py,
every change). The job handlers here re-read the request, decide with the pure rules in
bot.domain.reminders and bot.domain.cleanup, and send through `OnceOnly`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.deploy import deploy_button, deployable
from bot.blocks.reminders import (
    Message,
    cleanup_done,
    cleanup_escalation,
    cleanup_prompt,
    reminder_message,
    window_reminder_message,
)
from bot.domain.approval import SpendingPolicy
from bot.domain.cleanup import (
    CleanupChoice,
    CleanupPrompt,
    PromptStatus,
    Step,
    next_step,
)
from bot.domain.extension import (
    DEFAULT_EXTENSION_HOURS,
    ExtensionOffer,
    beyond_the_limit,
    extension_refusal,
)
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.reminders import (
    LIVE,
    STOPPED,
    LiveReservation,
    Reminder,
    ReminderKind,
    Verdict,
    extension_hold,
    live_reservations,
    request_window,
    timeliness,
)
from bot.domain.transitions import TransitionRefused, cleaned_up, cleanup_answered, cleanup_step
from bot.services.actor import Actor
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.delivery import OnceOnly
from bot.services.jobs import JobKind, JobRegistry, RetryLater
from bot.services.ports import Clock, Job
from bot.services.ports.aftercare import ExtensionMarket, Leftovers

log = logging.getLogger(__name__)


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReminderJob(_Payload):
    """One reminder occurrence (see bot.domain.reminders.Reminder)."""

    request: str
    kind: ReminderKind
    anchor: datetime
    lead_s: int
    due: datetime

    @classmethod
    def of(cls, reminder: Reminder) -> ReminderJob:
        return cls(
            request=reminder.request_id,
            kind=reminder.kind,
            anchor=reminder.anchor,
            lead_s=int(reminder.lead.total_seconds()),
            due=reminder.due,
        )

    def reminder(self) -> Reminder:
        lead = timedelta(seconds=self.lead_s)
        due = None if self.due == self.anchor - lead else self.due
        return Reminder(self.request, self.kind, self.anchor, lead, due)


class CleanupJob(_Payload):
    """Look at what is left after the end and take the cleanup prompt's next step."""

    request: str


REMIND = JobKind("remind", ReminderJob)
CLEANUP = JobKind("cleanup", CleanupJob)
KINDS: tuple[JobKind[Any], ...] = (REMIND, CLEANUP)


def reminder_job(reminder: Reminder) -> Job:
    return REMIND.job(reminder.slot, reminder.due, ReminderJob.of(reminder))


def reminder_job_id(slot: str) -> str:
    return f"{REMIND.name}:{slot}"


def cleanup_job_id(request_id: str) -> str:
    return f"{CLEANUP.name}:{request_id}"


def cleanup_job(request_id: str, due: datetime) -> Job:
    return CLEANUP.job(request_id, due, CleanupJob(request=request_id))


class ReminderService:
    def __init__(
        self,
        changes: RequestChanges,
        delivery: OnceOnly,
        clock: Clock,
        *,
        before_start: Sequence[timedelta],
        before_end: Sequence[timedelta],
        approval_channel: str,
        extensions: ExtensionMarket | None = None,
        leftovers: Leftovers | None = None,
        limits: SpendingPolicy | None = None,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.delivery = delivery
        self.clock = clock
        self.before_start = list(before_start)
        self.before_end = list(before_end)
        self.approval_channel = approval_channel
        self.extensions = extensions
        self.leftovers = leftovers
        self.limits = limits or SpendingPolicy()

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(REMIND, self.send)
        jobs.register(CLEANUP, self.run_cleanup)

    def live_for(self, user: str) -> list[LiveReservation]:
        """The person's reservations not yet over, for App Home."""
        records = self.store.for_user_in_states(user, LIVE, 50)
        return live_reservations(records, self.before_start, self.before_end, self.clock.now())

    # --- sending a reminder -------------------------------------------------------------

    def send(self, job: ReminderJob) -> None:
        record = self.store.get(job.request)
        if record is None or record.state in STOPPED:
            return  # cancelled, failed or cleaned up: its jobs were cancelled with it
        reservation = record.reservation
        reminder = job.reminder()
        now = self.clock.now()
        if reservation is None:
            self._send_window(record, reminder, now)
            return
        hold = extension_hold(reminder, record.extension, now)
        if hold is not None:
            raise RetryLater(hold, f"{record.id}: an approved extension may move the end")
        verdict = timeliness(reminder, reservation, now)
        if verdict.verdict is Verdict.DROP:
            self._note(record.id, "reminder-dropped", f"{reminder.kind.value}: {verdict.reason}")
            return
        offer = self._extension_offer(record) if reminder.kind.about_end else None
        # Paid so far as the ledger keeps it: the spending policy judges the total.
        paid = record.money.committed_usd
        over = beyond_the_limit(offer, paid, self.limits) if offer else None
        message = reminder_message(
            record.id,
            reminder,
            reservation,
            now,
            late=verdict.verdict is Verdict.SEND_LATE,
            extension=None if over else offer,
            not_extendable=over,
            more=_deploy_offer(record, reminder.kind),
        )
        self._send(reminder.delivery_key, record.requester, message)

    def _send_window(self, record: CapacityRecord, reminder: Reminder, now: datetime) -> None:
        """On-Demand and Spot: about the requested window; no Extend button."""
        window = request_window(record)
        if window is None:
            return
        verdict = timeliness(reminder, window, now)
        if verdict.verdict is Verdict.DROP:
            self._note(record.id, "reminder-dropped", f"{reminder.kind.value}: {verdict.reason}")
            return
        request = record.request
        message = window_reminder_message(
            record.id,
            reminder,
            window.kind,
            request.count,
            request.instance_type,
            window.end,
            now,
            late=verdict.verdict is Verdict.SEND_LATE,
        )
        self._send(reminder.delivery_key, record.requester, message)

    def _extension_offer(self, record: CapacityRecord) -> ExtensionOffer | None:
        """The Extend button's offer, when AWS would extend; the reminder goes without
        it if asking fails (the reminder matters more than the button)."""
        res = record.reservation
        if self.extensions is None or res is None:
            return None
        if extension_refusal(res.kind, res.start, res.end, self.clock.now()) is not None:
            return None
        if record.extension is not None and record.extension.status.open:
            return None  # one extension at a time
        try:
            return self.extensions.extension_offer(res, DEFAULT_EXTENSION_HOURS)
        except Exception:
            log.warning("no extension offer for %s", record.id, exc_info=True)
            return None

    def _send(self, key: str, channel: str, message: Message) -> None:
        self.delivery.send(key, channel, message.text, message.blocks)

    def _note(self, request_id: str, action: str, detail: str) -> None:
        """An audit entry without a state change (a dropped reminder, an answer)."""

        self.changes.note(request_id, action, detail)

    # --- the cleanup prompt -------------------------------------------------------------

    def run_cleanup(self, job: CleanupJob) -> None:
        """Look at what is left, take the prompt's next step, and come back at its
        `next_at` (the job is given back for then)."""
        record = self.store.get(job.request)
        if record is None or record.state is not State.EXPIRED or self.leftovers is None:
            return
        prompt = record.cleanup or CleanupPrompt()
        now = self.clock.now()
        found = self.leftovers.find(record)
        plan = next_step(prompt, found, now)
        if plan.step is Step.RESOLVE:
            self._send(f"cleanup-done:{record.id}", record.requester, cleanup_done(record.id))

            def resolved(r: CapacityRecord) -> Change | None:
                why = "nothing tagged for it is left"
                return Change.of(cleaned_up(r, plan.prompt), "cleaned-up", BOT, why)

            self.changes.apply(record.id, resolved)
            return
        if plan.step is Step.PROMPT:
            message = cleanup_prompt(record.id, found, repeat=plan.prompt.prompts)
            self._send(f"cleanup:{record.id}:{plan.prompt.sent}", record.requester, message)
        elif plan.step is Step.ESCALATE:
            disowned = prompt.answered_by if prompt.status is PromptStatus.DISOWNED else None
            message = cleanup_escalation(record.id, record.requester, found, disowned)
            self._send(f"cleanup:{record.id}:{plan.prompt.sent}", self.approval_channel, message)
        elif plan.step is Step.DELETE:
            self.leftovers.delete(record, found.in_cleanup_order())
        if plan.prompt != prompt:
            self._save_prompt(record.id, prompt, plan.prompt, plan.step.value)
        if plan.prompt.next_at is not None:
            raise RetryLater(plan.prompt.next_at, f"cleanup of {record.id}: next look")

    def _save_prompt(
        self, request_id: str, expected: CleanupPrompt, prompt: CleanupPrompt, action: str
    ) -> None:
        def saved(r: CapacityRecord) -> Change | None:
            step = cleanup_step(r, expected, prompt)
            return Change.of(step, f"cleanup-{action}", BOT, _cost(prompt))

        self.changes.apply(request_id, saved)

    def answer_cleanup(self, request_id: str, actor: Actor, choice: CleanupChoice) -> str:
        """A button on the prompt (the requester's) or its escalation (the approvers');
        returns what to tell the person who pressed it."""
        now = self.clock.now()
        refusal: list[str] = []
        user = actor.user

        def answered(r: CapacityRecord) -> Change | None:
            try:
                step = cleanup_answered(r, actor, choice, now)
            except TransitionRefused as refused:
                refusal.append(str(refused))
                return None
            return Change.of(step, f"cleanup-{choice.value}", user)

        record, change = self.changes.apply(request_id, answered)
        if record is None:
            return f"There is no request {request_id}."
        if change is None:
            return refusal[0] if refusal else "Nothing changed."
        return _ANSWERED[choice].format(id=request_id)


_ANSWERED = {
    CleanupChoice.CLEAN_UP: "Cleaning up {id}: you will hear when nothing is left.",
    CleanupChoice.KEEP: "Kept for a day: you will be asked about {id} again tomorrow.",
    CleanupChoice.NOT_MINE: "Thanks: the approvers are asked to look after {id} instead.",
}


def _cost(prompt: CleanupPrompt) -> str:
    return f"{prompt.status.value}, ${prompt.usd_per_hour:,.2f}/h still billed"


def _deploy_offer(record: CapacityRecord, kind: ReminderKind) -> list[dict[str, Any]]:
    """A plan for endpoints that was just delivered: the Deploy button goes with the news."""
    if kind is ReminderKind.AT_START and deployable(record):
        return [deploy_button(record)]
    return []
