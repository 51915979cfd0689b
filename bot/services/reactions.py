"""What every change of a request causes, in one table.

`CAUSES` maps each event (bot.domain.events) to the jobs it schedules or cancels; they
are written in the same compare-and-set as the change (an outbox: a job is never lost
nor sent for a change that did not happen). Two rows hold for every change, whatever
its event: the reminders follow the request's window (bot.domain.reminders), and a
request cleaned up takes its deployments' endpoints with it. After the write, every
change is counted in the metrics, a new request's id goes on the log lines that follow,
and a reminder dropped because its end moved is noted in the audit trail.

An event missing from `CAUSES` causes nothing but those rows (`QUIET` lists them, so a
new event is a decision, not an omission).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.blocks.text import when
from bot.domain import events as on
from bot.domain.buy_once import first_look
from bot.domain.events import Event, ExtensionEvent
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.reminders import human_duration, overtaken_by_move, reminder_changes
from bot.domain.sampling import BILLS_WHEN_IDLE, IdleStep
from bot.logs import context as log_context
from bot.logs import set_fields as set_log_fields
from bot.services.deploying.jobs import GONE, RequestCleanedJob
from bot.services.extension_buying import PAYMENT_LOOK
from bot.services.extensions import BUY, POST_CARD, TELL, extension_job
from bot.services.jobs import (
    RequestJob,
    notify_job,
    purchase_job,
    quote_job,
    timeout_job,
    timeout_job_id,
    track_job,
)
from bot.services.notifications import CARD_REFUSED, CHART, CardRefusedJob, tell_job
from bot.services.ports import Job, Metrics
from bot.services.ports.metrics import NoMetrics
from bot.services.purchasing import FIRST_POLL
from bot.services.reminders import cleanup_job, cleanup_job_id, reminder_job, reminder_job_id
from bot.services.usage import LIVE, idle_alert_job, report_job, round_job


@dataclass
class Jobs:
    """Jobs to schedule and job ids to cancel with one change."""

    schedule: list[Job] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)

    def add(self, more: Jobs) -> None:
        self.schedule += more.schedule
        scheduled = {j.id for j in self.schedule}
        self.cancel += [job for job in more.cancel if job not in scheduled]


# A cause: the event, the record before (None when created) and after, and now.
Cause = Callable[[Event, CapacityRecord | None, CapacityRecord, datetime], Jobs]


def _schedule(*jobs: Job) -> Jobs:
    return Jobs(schedule=list(jobs))


TOLD_AFTER = timedelta(seconds=1)


# --- the causes ---------------------------------------------------------------------------


def quote(event: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    assert isinstance(event, on.Opened)
    return _schedule(quote_job(new.id, now, event.response_url))


def tell(_: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    """The approval card is shown the request as it is now; the requester is told of
    the state it entered, by a job of its own written with the change (the notify job
    reads the request later, when it may have moved on)."""
    told = tell_job(new, now)
    return _schedule(notify_job(new.id, now), *([told] if told else []))


def tell_if_moved_on(
    event: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    assert isinstance(event, on.Tracked)
    return tell(event, old, new, now) if event.moved_on else Jobs()


def time_out_at_deadline(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    assert new.approval_deadline is not None
    return _schedule(timeout_job(new.id, new.approval_deadline))


def no_timeout(_: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    return Jobs(cancel=[timeout_job_id(new.id)])


def buy_now(_: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    """The purchase hand-off, in the same compare-and-set as the last approval."""
    return _schedule(purchase_job(new.id, now))


def look_again_soon(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    """The purchase job comes back to look in AWS, never to buy."""
    return _schedule(purchase_job(new.id, first_look(now)))


def track_soon(_: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    return _schedule(track_job(new.id, now + FIRST_POLL))


def track_from_start(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    return _schedule(track_job(new.id, new.request.start))


def _extension(kind_job: Callable[[ExtensionEvent, str, datetime], Job]) -> Cause:
    def cause(event: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
        assert isinstance(event, ExtensionEvent)
        return _schedule(kind_job(event, new.id, now))

    return cause


post_extension_card = _extension(lambda e, rid, now: extension_job(POST_CARD, rid, e.number, now))
# The approvers' card and the requester are told (the card shows the approvals so far).
tell_extension = _extension(lambda e, rid, now: extension_job(TELL, rid, e.number, now))
buy_extension_now = _extension(lambda e, rid, now: extension_job(BUY, rid, e.number, now))
look_at_extension_soon = _extension(
    lambda e, rid, now: extension_job(BUY, rid, e.number, first_look(now))
)
# The same job follows a payment AWS is processing, until it says paid or failed.
follow_extension_payment = _extension(
    lambda e, rid, now: extension_job(BUY, rid, e.number, now + PAYMENT_LOOK)
)


def tell_card_refused(
    event: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    assert isinstance(event, on.CardRefused)
    payload = CardRefusedJob(request=new.id, channel=event.channel, error=event.error)
    return _schedule(CARD_REFUSED.job(new.id, now, payload))


def look_at_leftovers(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    """The cleanup prompt's next look, when the answer says (at once for Clean up)."""
    due = new.cleanup.next_at if new.cleanup and new.cleanup.next_at else now
    return _schedule(cleanup_job(new.id, due))


def sample_when_live(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    """A request that starts running joins the sampling rounds (the round job is one for
    all: scheduling it again only brings the next round forward)."""
    started = new.state in LIVE and (old is None or old.state not in LIVE)
    return _schedule(round_job(now)) if started else Jobs()


def report_when_ended(
    _: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime
) -> Jobs:
    """A reservation that ends gets its report card."""
    ended = new.state is State.EXPIRED and (old is None or old.state is not State.EXPIRED)
    res = new.reservation
    if not ended or res is None or res.kind not in BILLS_WHEN_IDLE:
        return Jobs()
    return _schedule(report_job(new.id, max(now, res.end)))


def tell_idle(event: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    """An idle step decided with the sample is told by a job written with it."""
    assert isinstance(event, on.Sampled)
    if not event.alert or not event.stretch:
        return Jobs()
    stretch = datetime.fromisoformat(event.stretch)
    step = IdleStep(event.alert)
    jobs = [idle_alert_job(new.id, step, stretch, now)]
    if step is IdleStep.ESCALATE and event.told < IdleStep.TELL:
        # A gap in sampling went past the requester's steps: they hear of it too, a
        # second on (what else is due to them now goes first; DMs are paced a second).
        jobs.append(idle_alert_job(new.id, IdleStep.TELL, stretch, now + TOLD_AFTER))
    return _schedule(*jobs)


# --- the table ----------------------------------------------------------------------------

CAUSES: dict[type[Event], tuple[Cause, ...]] = {
    on.Opened: (quote,),
    on.Submitted: (tell, time_out_at_deadline),
    on.Cancelled: (tell, no_timeout),
    on.TimedOut: (tell,),
    on.ApprovalRecorded: (tell,),
    on.Approved: (tell, buy_now, no_timeout),
    on.Rejected: (tell, no_timeout),
    on.WindowScheduled: (tell, track_from_start),
    on.Bought: (tell, track_soon, sample_when_live),
    on.PurchaseUnknown: (tell, look_again_soon),
    on.Requoted: (tell,),
    on.PurchaseFailed: (tell,),
    on.MarkedFailed: (tell,),
    on.Tracked: (tell_if_moved_on, sample_when_live, report_when_ended),
    on.WindowMovedOn: (tell, sample_when_live),
    on.ExtensionAsked: (post_extension_card,),
    on.ExtensionApprovalRecorded: (tell_extension,),
    on.ExtensionApproved: (buy_extension_now,),
    on.ExtensionRejected: (tell_extension,),
    # The new end also moves the reminders: see `every change` below.
    on.ExtensionBought: (tell_extension, tell),
    on.ExtensionUnknown: (look_at_extension_soon, tell_extension),
    on.ExtensionPaymentPending: (follow_extension_payment, tell_extension),
    on.ExtensionFailed: (tell_extension,),
    on.CardRefused: (tell_card_refused,),
    on.CleanupAnswered: (look_at_leftovers,),
    on.Sampled: (tell_idle,),
    # Ended now: the cleanup deletes what is tagged for it at once (see `every change`).
    on.Released: (tell, look_at_leftovers, report_when_ended),
    # on.CardPosted: the cost chart, when charts are drawn (`Reactions.__init__`).
}
# Events that cause nothing of their own: the quote job and the cleanup job tell people
# themselves; a claim, a purchase call sent, a retry and a note are for the audit trail.
QUIET: frozenset[type[Event]] = frozenset(
    {
        on.Quoted,
        on.QuoteFailed,
        on.FoundByWatch,
        on.PurchaseStarted,
        on.PurchaseSent,
        on.PurchaseRetrying,
        on.ExtensionCardPosted,
        on.ExtensionPurchaseStarted,
        on.CleanupStepTaken,
        on.CleanedUp,
        on.Noted,
    }
)


def draw_chart(_: Event, old: CapacityRecord | None, new: CapacityRecord, now: datetime) -> Jobs:
    if new.quote is None:
        return Jobs()
    return _schedule(CHART.job(new.id, now, RequestJob(request=new.id)))


class Reactions:
    """The table applied: the jobs of a change, and what follows its write."""

    def __init__(
        self,
        now: Callable[[], datetime],
        *,
        before_start: Sequence[timedelta] = (),
        before_end: Sequence[timedelta] = (),
        charts: bool = False,
        metrics: Metrics | None = None,
        already_sent: Callable[[str], bool] = lambda _key: False,
    ) -> None:
        """`charts`: a cost chart is drawn for each approval card. `already_sent`:
        whether a message with this delivery key went out (a dropped reminder that did
        is not noted)."""
        self.now = now
        self.before_start = list(before_start)
        self.before_end = list(before_end)
        self.causes = {**CAUSES, on.CardPosted: (draw_chart,) if charts else ()}
        self.metrics = metrics or NoMetrics()
        self.already_sent = already_sent

    def jobs(self, event: Event, old: CapacityRecord | None, new: CapacityRecord) -> Jobs:
        """What `event` (old -> new) schedules and cancels, to write with it."""
        now = self.now()
        found = Jobs()
        for cause in self.causes.get(type(event), ()):
            found.add(cause(event, old, new, now))
        found.add(self._reminders_follow(old, new, now))
        found.add(self._deployments_go_with_the_request(old, new, now))
        return found

    def after(
        self, event: Event, old: CapacityRecord | None, new: CapacityRecord
    ) -> list[tuple[str, str]]:
        """What follows the write of `event`: counted, logged; returns the notes to add
        to the audit trail (action, detail)."""
        self.metrics.request_saved(old, new)
        if old is None and "request_id" not in log_context():
            set_log_fields(request_id=new.id)  # the lines that follow name the new request
        return self._dropped_reminders(old, new)

    # --- every change ---------------------------------------------------------------------

    def _reminders_follow(
        self, old: CapacityRecord | None, new: CapacityRecord, now: datetime
    ) -> Jobs:
        """Bought, delivered, moved, ended, stopped: the reminder jobs move with it."""
        plan = reminder_changes(old, new, self.before_start, self.before_end, now)
        jobs = Jobs(
            schedule=[reminder_job(r) for r in plan.schedule],
            cancel=[reminder_job_id(slot) for slot in plan.cancel],
        )
        if plan.cleanup_at is not None:
            jobs.schedule.append(cleanup_job(new.id, plan.cleanup_at))
        if plan.stop_cleanup:
            jobs.cancel.append(cleanup_job_id(new.id))
        return jobs

    @staticmethod
    def _deployments_go_with_the_request(
        old: CapacityRecord | None, new: CapacityRecord, now: datetime
    ) -> Jobs:
        """A request cleaned up means its deployments' endpoints are gone too (they carry
        its tag): a job records it."""
        cleaned = new.state is State.CLEANED_UP and (old is None or old.state is not new.state)
        if not cleaned:
            return Jobs()
        return _schedule(GONE.job(new.id, now, RequestCleanedJob(request=new.id)))

    def _dropped_reminders(
        self, old: CapacityRecord | None, new: CapacityRecord
    ) -> list[tuple[str, str]]:
        """When the end moved (an extension bought), the reminders about the old end that
        were due and not sent are dropped, not sent late (their jobs got the new end's
        occurrences in the same write): the audit trail says so."""
        was = old.reservation if old else None
        res = new.reservation
        if was is None or res is None:
            return []
        notes = []
        for reminder in overtaken_by_move(new.id, was, res, self.before_end, self.now()):
            if self.already_sent(reminder.delivery_key):
                continue  # it went out before the end moved
            what = f"{reminder.kind.value} {human_duration(reminder.lead)} before {when(was.end)}"
            notes.append(("reminder-dropped", f"{what}: moved to {when(res.end)}"))
        return notes
