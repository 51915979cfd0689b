"""Which reminders a reservation calls for, and which late ones still make sense."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from bot.domain import reminders as r
from bot.domain.reminders import Reminder, ReminderKind, Verdict

H = timedelta(hours=1)
START = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)
END = START + timedelta(days=3)
LEADS_START = [24 * H, H]
LEADS_END = [24 * H, 2 * H]


@dataclass(frozen=True)
class W:
    kind: str
    start: datetime = START
    end: datetime = END


CB, TP, ODCR = W("capacity-block"), W("training-plan"), W("on-demand-reservation")


def kinds(reminders: list[Reminder]) -> list[tuple[str, timedelta]]:
    return sorted((x.kind.value, x.lead) for x in reminders)


@pytest.mark.parametrize("window", [CB, TP, ODCR])
def test_a_purchase_well_ahead_gets_every_lead_time(window: W) -> None:
    plan = r.plan_after_purchase("R1", window, LEADS_START, LEADS_END, START - 10 * 24 * H)
    expected = [
        ("before-end", 2 * H),
        ("before-end", 24 * H),
        ("before-start", H),
        ("before-start", 24 * H),
    ]
    if window.kind == "capacity-block":  # the checkpoint warning, 40 min before the end
        expected.insert(0, ("checkpoint", timedelta(minutes=40)))
    assert kinds(plan) == sorted(expected)
    due = {(x.kind, x.lead): x.due for x in plan}
    assert due[(ReminderKind.BEFORE_START, H)] == START - H
    assert due[(ReminderKind.BEFORE_END, 2 * H)] == END - 2 * H
    if window.kind == "capacity-block":
        assert due[(ReminderKind.CHECKPOINT, timedelta(minutes=40))] == datetime(
            2026, 12, 17, 10, 50, tzinfo=UTC
        )


def test_before_start_reminders_already_passed_at_purchase_fold_into_one_now() -> None:
    now = START - 30 * timedelta(minutes=1)
    plan = r.plan_after_purchase("R1", CB, LEADS_START, LEADS_END, now)
    starts = [x for x in plan if x.kind is ReminderKind.BEFORE_START]
    assert len(starts) == 1 and starts[0].due == now and starts[0].lead == H


def test_a_purchase_after_the_start_gets_no_before_start_reminder() -> None:
    plan = r.plan_after_purchase("R1", CB, LEADS_START, LEADS_END, START + H)
    assert all(x.kind is not ReminderKind.BEFORE_START for x in plan)


def test_slots_are_stable_and_delivery_keys_follow_the_anchor() -> None:
    a = Reminder("R1", ReminderKind.BEFORE_END, END, 2 * H)
    moved = Reminder("R1", ReminderKind.BEFORE_END, END + 24 * H, 2 * H)
    assert a.slot == moved.slot == "R1:before-end:7200"
    assert a.delivery_key != moved.delivery_key
    assert a.slot in r.all_slots("R1", LEADS_START, LEADS_END)


@pytest.mark.parametrize(
    ("kind", "anchor", "lead", "now", "verdict"),
    [
        (ReminderKind.BEFORE_START, START, H, START - H, Verdict.SEND),
        (ReminderKind.BEFORE_START, START, H, START - H + 4 * timedelta(minutes=1), Verdict.SEND),
        (ReminderKind.BEFORE_START, START, 24 * H, START - 2 * H, Verdict.SEND_LATE),
        (ReminderKind.BEFORE_START, START, H, START, Verdict.DROP),  # "starts in 1 h" after
        (ReminderKind.AT_START, START, timedelta(0), START + 3 * H, Verdict.SEND_LATE),
        (ReminderKind.AT_START, START, timedelta(0), END, Verdict.DROP),
        (ReminderKind.BEFORE_END, END, 24 * H, END - H, Verdict.SEND_LATE),
        (ReminderKind.BEFORE_END, END, 2 * H, END, Verdict.DROP),
        (ReminderKind.CHECKPOINT, END, 40 * timedelta(minutes=1), END - 35 * timedelta(minutes=1),
         Verdict.SEND),
        (ReminderKind.CHECKPOINT, END, 40 * timedelta(minutes=1), END - 30 * timedelta(minutes=1),
         Verdict.DROP),
        (ReminderKind.CLEANUP, END, timedelta(0), END + 30 * 24 * H, Verdict.SEND_LATE),
    ],
)  # fmt: skip
def test_late_catch_up(
    kind: ReminderKind, anchor: datetime, lead: timedelta, now: datetime, verdict: Verdict
) -> None:
    reminder = Reminder("R1", kind, anchor, lead)
    assert r.timeliness(reminder, CB, now).verdict is verdict


def test_a_reminder_about_an_old_end_is_dropped_as_moved() -> None:
    old = Reminder("R1", ReminderKind.BEFORE_END, END, 2 * H)
    extended = W("capacity-block", START, END + 24 * H)
    result = r.timeliness(old, extended, END - 2 * H)
    assert result.verdict is Verdict.DROP and result.reason.startswith("moved")


def test_end_reminders_after_an_extension_only_those_still_ahead() -> None:
    extended = W("capacity-block", START, END + 24 * H)
    now = END - H
    plan = r.end_reminders("R1", extended, LEADS_END, now)
    assert kinds(plan) == [
        ("before-end", 2 * H),
        ("before-end", 24 * H),
        ("checkpoint", timedelta(minutes=40)),
    ]
    later = r.end_reminders("R1", extended, LEADS_END, END + 23 * H)
    assert kinds(later) == [("checkpoint", timedelta(minutes=40))]


def test_human_durations() -> None:
    assert r.human_duration(timedelta(days=1, hours=4)) == "1 d 4 h"
    assert r.human_duration(timedelta(hours=3, minutes=20)) == "3 h 20 min"
    assert r.human_duration(timedelta(minutes=40)) == "40 min"
    assert r.human_duration(timedelta(seconds=10)) == "less than a minute"
    assert r.time_left(CB, START - H) == H
    assert r.time_left(CB, START + H) == END - START - H
    assert r.time_left(CB, END + H) == timedelta(0)


def _extension(status: str, decided: datetime | None) -> r.Extension:
    from bot.domain.extension import ExtensionOffer, ExtensionStatus

    offer = ExtensionOffer(offering_id="cbe-1", hours=24, start=END, end=END + 24 * H, fee_usd=10.0)
    return r.Extension(
        number=1,
        offer=offer,
        requested_by="U1",
        requested_at=END - 4 * H,
        status=ExtensionStatus(status),
        decided_at=decided,
    )


@pytest.mark.parametrize("status", ["approved", "purchasing"])
def test_reminders_about_the_end_wait_while_an_approved_extension_is_bought(status: str) -> None:
    decided = END - 2 * H
    ext = _extension(status, decided)
    two_hours = Reminder("R1", ReminderKind.BEFORE_END, END, 2 * H)
    checkpoint = Reminder("R1", ReminderKind.CHECKPOINT, END, timedelta(minutes=40))
    now = decided + timedelta(minutes=3)
    assert r.extension_hold(two_hours, ext, now) == now + r.EXTENSION_HOLD
    assert r.extension_hold(checkpoint, ext, now) == now + r.EXTENSION_HOLD
    # Not for a reminder about the start, and never for longer than the bound.
    starts = Reminder("R1", ReminderKind.AT_START, START)
    assert r.extension_hold(starts, ext, now) is None
    almost = decided + r.EXTENSION_HOLD_MAX - timedelta(seconds=10)
    assert r.extension_hold(two_hours, ext, almost) == decided + r.EXTENSION_HOLD_MAX
    assert r.extension_hold(two_hours, ext, decided + r.EXTENSION_HOLD_MAX) is None


@pytest.mark.parametrize("status", ["pending_approval", "bought", "rejected", "failed"])
def test_no_wait_unless_an_extension_is_being_bought(status: str) -> None:
    ext = _extension(status, END - 2 * H)
    two_hours = Reminder("R1", ReminderKind.BEFORE_END, END, 2 * H)
    assert r.extension_hold(two_hours, ext, END - 2 * H) is None
    assert r.extension_hold(two_hours, None, END - 2 * H) is None


def test_reminders_overtaken_by_a_move_are_those_due_about_the_old_end() -> None:
    moved = W("capacity-block", START, END + 24 * H)
    now = END - 90 * timedelta(minutes=1)
    overtaken = r.overtaken_by_move("R1", CB, moved, LEADS_END, now)
    assert kinds(overtaken) == [("before-end", 2 * H), ("before-end", 24 * H)]
    assert all(x.anchor == END for x in overtaken)
    # The checkpoint too once due; nothing when the end did not move or had passed.
    later = END - 35 * timedelta(minutes=1)
    assert ("checkpoint", timedelta(minutes=40)) in kinds(
        r.overtaken_by_move("R1", CB, moved, LEADS_END, later)
    )
    assert r.overtaken_by_move("R1", CB, CB, LEADS_END, now) == []
    assert r.overtaken_by_move("R1", CB, moved, LEADS_END, END + H) == []
    assert kinds(r.overtaken_by_move("R1", TP, W("training-plan", START, END + 24 * H),
                                     LEADS_END, later)) == [
        ("before-end", 2 * H), ("before-end", 24 * H)]  # fmt: skip


@pytest.mark.parametrize("kind", ["on-demand", "spot"])
def test_on_demand_and_spot_follow_their_requested_window(kind: str) -> None:
    from bot.domain.comparison import OptionKind
    from bot.domain.lifecycle import State
    from bot.domain.records import Choice
    from tests.factories import make_record

    approved = make_record(
        "R1", state=State.APPROVED, choice=Choice(kind=OptionKind(kind), total_usd=1.0)
    )
    window = r.request_window(approved)
    assert window is not None and (window.start, window.end) == (
        approved.request.start,
        approved.request.end,
    )
    now = window.start - 5 * 24 * H
    scheduled = approved.model_copy(update={"state": State.SCHEDULED})
    plan = r.reminder_changes(approved, scheduled, LEADS_START, LEADS_END, now)
    assert kinds(list(plan.schedule)) == [("before-end", 2 * H), ("before-end", 24 * H)]
    assert {x.anchor for x in plan.schedule} == {window.end}
    # Nothing again on a save that does not change the state; the cleanup at the end.
    assert r.reminder_changes(scheduled, scheduled, LEADS_START, LEADS_END, now).empty
    expired = scheduled.model_copy(update={"state": State.EXPIRED})
    ended = r.reminder_changes(scheduled, expired, LEADS_START, LEADS_END, window.end + H)
    assert ended.cleanup_at == window.end + H and ended.schedule == ()
    assert {f"R1:before-end:{24 * 3600}", f"R1:before-end:{2 * 3600}"} <= set(ended.cancel)
    # A Capacity Block choice without a reservation yet has no window of its own.
    block = approved.model_copy(
        update={"choice": Choice(kind=OptionKind.CAPACITY_BLOCK, offering_id="x", total_usd=1.0)}
    )
    assert r.request_window(block) is None
