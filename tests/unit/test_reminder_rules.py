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
