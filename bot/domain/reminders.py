"""Which reminders a reservation calls for, when, and whether a late one still makes sense.

Pure rules over a reservation's window (kind, start, end) and the configured lead times
(GPU_BOT_REMIND_BEFORE_START / GPU_BOT_REMIND_BEFORE_EXPIRY). The services turn these into
jobs scheduled in the same compare-and-set as the change that calls for them.

- Before start: one per lead time ("starts at ..., here is how to use it").
- At start: when tracking sees the capacity delivered, not at the clock's say-so.
- Before end: one per lead time; for Capacity Blocks also 40 minutes before the end
  (instances start being terminated 30 minutes before it: save checkpoints now).
- After the end: the cleanup prompt (see cleanup.py), when tracking sees it expired.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Protocol

from bot.domain.extension import Extension, ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.offering_rules import CB_EXPIRY_WARNING, CB_TERMINATION_LEAD
from bot.domain.records import CapacityRecord
from bot.domain.sampling import so_far, window_of

CAPACITY_BLOCK = "capacity-block"
# A reminder sent more than this after its moment says so ("late").
LATE_AFTER = timedelta(minutes=5)
_EPOCH = datetime.fromtimestamp(0, UTC)  # any anchor: slots do not depend on it


class Window(Protocol):
    """What the rules need of a reservation (bot.domain.records.Reservation has these)."""

    @property
    def kind(self) -> str: ...

    @property
    def start(self) -> datetime: ...

    @property
    def end(self) -> datetime: ...


class ReservationView(Window, Protocol):
    """What a reminder message shows of a reservation."""

    @property
    def id(self) -> str: ...  # reservation id, or the plan's ARN

    @property
    def region(self) -> str: ...

    @property
    def availability_zone(self) -> str | None: ...

    @property
    def instance_type(self) -> str: ...

    @property
    def instances(self) -> int: ...


class ReminderKind(StrEnum):
    BEFORE_START = "before-start"
    AT_START = "at-start"
    BEFORE_END = "before-end"
    CHECKPOINT = "checkpoint"  # Capacity Blocks only: 40 minutes before the end
    CLEANUP = "cleanup"  # after the end: what is left and what it costs

    @property
    def about_end(self) -> bool:
        return self in (ReminderKind.BEFORE_END, ReminderKind.CHECKPOINT)

    @property
    def label(self) -> str:
        """As people read it."""
        return {
            ReminderKind.BEFORE_START: "before the start",
            ReminderKind.AT_START: "at the start",
            ReminderKind.BEFORE_END: "before the end",
            ReminderKind.CHECKPOINT: "the checkpoint warning",
            ReminderKind.CLEANUP: "the cleanup prompt",
        }[self]


@dataclass(frozen=True)
class Reminder:
    """One reminder occurrence: `anchor` is the start or end it is about, `lead` how long
    before it the reminder is due (zero for at-start and cleanup)."""

    request_id: str
    kind: ReminderKind
    anchor: datetime
    lead: timedelta = timedelta(0)
    due_at: datetime | None = None  # when it is due if not `anchor - lead` (e.g. "now")

    @property
    def due(self) -> datetime:
        return self.due_at if self.due_at is not None else self.anchor - self.lead

    @property
    def slot(self) -> str:
        """The same for every occurrence of this kind and lead on this request, so moving
        a reminder replaces its job rather than adding one."""
        return f"{self.request_id}:{self.kind.value}:{int(self.lead.total_seconds())}"

    @property
    def delivery_key(self) -> str:
        """Unique per occurrence: a reminder moved to a new end is a new message, the same
        one retried after a crash is not."""
        return f"{self.slot}:{int(self.anchor.timestamp())}"


class Verdict(StrEnum):
    SEND = "send"
    SEND_LATE = "send-late"
    DROP = "drop"


@dataclass(frozen=True)
class Timeliness:
    verdict: Verdict
    reason: str = ""


def _before_start(request_id: str, window: Window, leads: Iterable[timedelta]) -> list[Reminder]:
    return [
        Reminder(request_id, ReminderKind.BEFORE_START, window.start, lead)
        for lead in leads
        if lead > timedelta(0)
    ]


def end_reminders(
    request_id: str, window: Window, leads: Iterable[timedelta], now: datetime
) -> list[Reminder]:
    """Before-end reminders (and the Capacity Block checkpoint warning) still ahead."""
    reminders = [
        Reminder(request_id, ReminderKind.BEFORE_END, window.end, lead)
        for lead in leads
        if lead > timedelta(0) and window.end - lead > now
    ]
    if window.kind == CAPACITY_BLOCK and window.end - CB_EXPIRY_WARNING > now:
        reminders.append(
            Reminder(request_id, ReminderKind.CHECKPOINT, window.end, CB_EXPIRY_WARNING)
        )
    return reminders


def plan_after_purchase(
    request_id: str,
    window: Window,
    before_start: Sequence[timedelta],
    before_end: Sequence[timedelta],
    now: datetime,
) -> list[Reminder]:
    """Reminders to schedule when a reservation is bought.

    Before-start reminders whose moment has already passed at purchase are folded into one,
    due now, so someone who buys an hour ahead still gets "here is how to use it" once.
    """
    starts = _before_start(request_id, window, before_start)
    ahead = [r for r in starts if r.due > now]
    passed = [r for r in starts if r.due <= now]
    if passed and window.start > now:
        shortest = min(passed, key=lambda r: r.lead)
        ahead.append(
            Reminder(request_id, shortest.kind, shortest.anchor, shortest.lead, due_at=now)
        )
    return ahead + end_reminders(request_id, window, before_end, now)


def at_start(request_id: str, window: Window, now: datetime) -> Reminder:
    """Due now: tracking has just seen the capacity delivered."""
    return Reminder(request_id, ReminderKind.AT_START, window.start, due_at=now)


def cleanup(request_id: str, window: Window, now: datetime) -> Reminder:
    """Due now: tracking has just seen the reservation end."""
    return Reminder(request_id, ReminderKind.CLEANUP, window.end, due_at=max(now, window.end))


def all_slots(
    request_id: str, before_start: Sequence[timedelta], before_end: Sequence[timedelta]
) -> list[str]:
    """Every slot a request may have, to cancel them all (cancelled, failed, cleaned up).

    Lead times are read from settings, which may change between scheduling and cancelling:
    the sending side therefore also checks the request's state before sending.
    """
    zero = timedelta(0)
    slots = [
        *(Reminder(request_id, ReminderKind.BEFORE_START, _EPOCH, lead) for lead in before_start),
        *(Reminder(request_id, ReminderKind.BEFORE_END, _EPOCH, lead) for lead in before_end),
        Reminder(request_id, ReminderKind.CHECKPOINT, _EPOCH, CB_EXPIRY_WARNING),
        Reminder(request_id, ReminderKind.AT_START, _EPOCH, zero),
    ]
    return [r.slot for r in slots]


def timeliness(reminder: Reminder, window: Window, now: datetime) -> Timeliness:
    """Whether a reminder taken up at `now` is still worth sending, and if it is late.

    After downtime overdue reminders are still sent, marked late, unless they no longer
    make sense: a before-start after the start, a before-end after the end, a checkpoint
    warning once instances are being terminated. A reminder about another start or end
    than the reservation's (it was moved) is dropped too.
    """
    anchor = window.start if reminder.kind in _ABOUT_START else window.end
    if reminder.anchor != anchor:
        return Timeliness(Verdict.DROP, f"moved: now about {anchor.isoformat()}")
    if reminder.kind is ReminderKind.BEFORE_START and now >= window.start:
        return Timeliness(Verdict.DROP, "the reservation has started")
    if reminder.kind is ReminderKind.AT_START and now >= window.end:
        return Timeliness(Verdict.DROP, "the reservation has ended")
    if reminder.kind is ReminderKind.BEFORE_END and now >= window.end:
        return Timeliness(Verdict.DROP, "the reservation has ended")
    if reminder.kind is ReminderKind.CHECKPOINT and now >= window.end - CB_TERMINATION_LEAD:
        return Timeliness(Verdict.DROP, "instances are already being terminated")
    if now - reminder.due > LATE_AFTER:
        return Timeliness(Verdict.SEND_LATE, f"due {reminder.due.isoformat()}")
    return Timeliness(Verdict.SEND)


_ABOUT_START = frozenset({ReminderKind.BEFORE_START, ReminderKind.AT_START})

# An approved extension is bought within seconds: until then the end may move, so a
# reminder about the end waits (this long between looks), for at most EXTENSION_HOLD_MAX
# after the approval (a purchase stuck longer must not cost the person their reminder).
EXTENSION_HOLD = timedelta(minutes=1)
EXTENSION_HOLD_MAX = timedelta(minutes=15)
_BUYING = frozenset({ExtensionStatus.APPROVED, ExtensionStatus.PURCHASING, ExtensionStatus.UNKNOWN})


def extension_hold(
    reminder: Reminder, extension: Extension | None, now: datetime
) -> datetime | None:
    """When to look again at a reminder about the end while an approved extension is
    being bought (None: do not wait). Sent now, it would speak of an end about to move,
    and the new end gets its own reminders: the person would hear twice."""
    if not reminder.kind.about_end or extension is None or extension.status not in _BUYING:
        return None
    decided = extension.decided_at or extension.requested_at
    if now - decided >= EXTENSION_HOLD_MAX:
        return None
    return min(now + EXTENSION_HOLD, decided + EXTENSION_HOLD_MAX)


def overtaken_by_move(
    request_id: str,
    old: Window,
    new: Window,
    before_end: Sequence[timedelta],
    now: datetime,
) -> list[Reminder]:
    """Reminders about the old end that were due by `now`, when the end moved to a new
    one still ahead: any of them not sent yet never will be (its job now carries the new
    end's occurrence). The caller records those as dropped."""
    if old.end == new.end or old.end <= now:
        return []
    leads = [lead for lead in before_end if lead > timedelta(0)]
    due = [Reminder(request_id, ReminderKind.BEFORE_END, old.end, lead) for lead in leads]
    if old.kind == CAPACITY_BLOCK:
        due.append(Reminder(request_id, ReminderKind.CHECKPOINT, old.end, CB_EXPIRY_WARNING))
    return [r for r in due if r.due <= now and r.due >= old.start]


def time_left(window: Window, now: datetime) -> timedelta:
    """Until the start when it is ahead, else until the end (never negative)."""
    target = window.start if now < window.start else window.end
    return max(target - now, timedelta(0))


def human_duration(delta: timedelta) -> str:
    """1 d 4 h, 3 h 20 min, 40 min, less than a minute."""
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{mins} min" if mins else "less than a minute"


# --- following a request's changes ------------------------------------------------------

# Once a request is in one of these, none of its reminders makes sense any more.
STOPPED = frozenset(
    {State.CANCELLED, State.FAILED, State.CLEANED_UP, State.REJECTED, State.TIMED_OUT}
)


@dataclass(frozen=True)
class ReminderChanges:
    """The reminder jobs a change calls for, written in the same compare-and-set."""

    schedule: tuple[Reminder, ...] = ()
    cancel: tuple[str, ...] = ()  # slots
    cleanup_at: datetime | None = None  # start the cleanup prompt then
    stop_cleanup: bool = False

    @property
    def empty(self) -> bool:
        return not (self.schedule or self.cancel or self.cleanup_at or self.stop_cleanup)


def reminder_changes(
    old: CapacityRecord | None,
    new: CapacityRecord,
    before_start: Sequence[timedelta],
    before_end: Sequence[timedelta],
    now: datetime,
) -> ReminderChanges:
    """What a change from `old` to `new` does to the request's reminders.

    Bought: every reminder of the window. Delivered (tracking saw it active): at start.
    Dates moved (an extension): the reminders about the moved start or end move with it.
    Ended (tracking saw it expire): the cleanup prompt. Cancelled, failed or cleaned up:
    none any more.
    """
    old_state = old.state if old else None
    slots = all_slots(new.id, before_start, before_end)
    if new.state in STOPPED:
        if old_state in STOPPED:
            return ReminderChanges()
        return ReminderChanges(cancel=tuple(slots), stop_cleanup=new.state is not State.EXPIRED)
    res = new.reservation
    if res is None:
        window = request_window(new)
        return (
            _window_reminder_changes(old, new, window, before_end, now)
            if window
            else ReminderChanges()
        )
    was = old.reservation if old else None
    schedule: list[Reminder] = []
    if was is None:
        schedule += plan_after_purchase(new.id, res, before_start, before_end, now)
    else:
        if res.start != was.start and res.start > now:
            schedule += [r for r in _before_start(new.id, res, before_start) if r.due > now]
        if res.end != was.end:
            schedule += end_reminders(new.id, res, before_end, now)
    entered = new.state is not old_state
    if entered and new.state is State.ACTIVE:
        schedule.append(at_start(new.id, res, now))
    cleanup_at = max(now, res.end) if entered and new.state is State.EXPIRED else None
    kept = {r.slot for r in schedule}
    # Reminders about a start or end that moved (or ended) and were not planned again.
    gone: set[str] = set()
    if cleanup_at is not None:
        gone |= set(slots)
    if was is not None and res.start != was.start:
        gone |= {s for s in slots if _kind(s) is ReminderKind.BEFORE_START}
    if was is not None and res.end != was.end:
        gone |= {s for s in slots if _kind(s).about_end}
    cancel = tuple(s for s in slots if s in gone and s not in kept)
    return ReminderChanges(schedule=tuple(schedule), cancel=cancel, cleanup_at=cleanup_at)


# --- On-Demand and Spot: nothing is bought, the request's own window is followed ------

WINDOW_ONLY = frozenset({"on-demand", "spot"})
# The states in which an On-Demand or Spot request runs in (or waits for) its window.
IN_WINDOW = frozenset({State.SCHEDULED, State.ACTIVE, State.EXPIRING})


@dataclass(frozen=True)
class RequestWindow:
    """The window an On-Demand or Spot request asked for (start + duration): what its
    reminders are about, as a reservation's window is for what was bought."""

    kind: str
    start: datetime
    end: datetime


def request_window(record: CapacityRecord) -> RequestWindow | None:
    """The requested window of an approved On-Demand or Spot request (None for anything
    with a reservation, or not chosen as On-Demand or Spot)."""
    if record.reservation is not None or record.choice is None:
        return None
    kind = record.choice.kind.value
    if kind not in WINDOW_ONLY:
        return None
    return RequestWindow(kind, record.request.start, record.request.end)


def _window_reminder_changes(
    old: CapacityRecord | None,
    new: CapacityRecord,
    window: RequestWindow,
    before_end: Sequence[timedelta],
    now: datetime,
) -> ReminderChanges:
    """On-Demand and Spot: before-end reminders once the window is scheduled (no
    checkpoint warning: AWS ends nothing at the end; no at-start reminder: the decision
    message says it is active), the cleanup prompt when the window has ended."""
    if old is not None and old.state is new.state:
        return ReminderChanges()
    if new.state is State.EXPIRED:
        ends = tuple(s for s in all_slots(new.id, (), before_end) if _kind(s).about_end)
        return ReminderChanges(cancel=ends, cleanup_at=max(now, window.end))
    if new.state not in IN_WINDOW:
        return ReminderChanges()
    return ReminderChanges(schedule=tuple(end_reminders(new.id, window, before_end, now)))


def _kind(slot: str) -> ReminderKind:
    return ReminderKind(slot.split(":")[1])


def next_reminder(
    request_id: str,
    window: Window,
    before_start: Sequence[timedelta],
    before_end: Sequence[timedelta],
    now: datetime,
) -> Reminder | None:
    """The next clock-driven reminder still ahead (App Home shows it)."""
    ahead = [
        r for r in _before_start(request_id, window, before_start) if r.due > now
    ] + end_reminders(request_id, window, before_end, now)
    return min(ahead, key=lambda r: r.due, default=None)


LIVE = frozenset({State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.EXPIRING})


@dataclass(frozen=True)
class LiveReservation:
    """A person's reservation (or the window of an On-Demand or Spot request) as App
    Home shows it."""

    record: CapacityRecord
    time_left: timedelta  # until the start when ahead, else until the end
    started: bool
    next: Reminder | None
    window: Window
    instances: int
    instance_type: str


def live_reservations(
    records: Iterable[CapacityRecord],
    before_start: Sequence[timedelta],
    before_end: Sequence[timedelta],
    now: datetime,
) -> list[LiveReservation]:
    """The records with a reservation (or an On-Demand/Spot window) not yet over,
    soonest end first."""
    live = []
    for record in records:
        res = record.reservation
        window: Window | None = res if res is not None else request_window(record)
        if window is None or record.state not in LIVE or window.end <= now:
            continue
        # On-Demand and Spot get no reminders before the start (see _window_reminder_changes).
        leads = before_start if res is not None else ()
        upcoming = next_reminder(record.id, window, leads, before_end, now)
        instances = res.instances if res is not None else record.request.count
        itype = res.instance_type if res is not None else record.request.instance_type
        started = now >= window.start
        left = time_left(window, now)
        # Utilisation so far: the last count held to now (the record is written less often).
        usage = so_far(record.usage, window_of(record), now)
        record = record.model_copy(update={"usage": usage})
        live.append(LiveReservation(record, left, started, upcoming, window, instances, itype))
    return sorted(live, key=lambda x: x.window.end)
