"""Before-end reminders around an extension, through the whole flow: reserve, approve,
bought and tracked by the jobs, Extend on the reminder, the extension approved (or
rejected), the controllable clock walked through every lead time. Each before-end
reminder reaches the requester once per (lead time, end), none of them late; a reminder
about an end that moved is dropped and audited, not sent."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from bot.blocks.ids import ActionId
from bot.blocks.text import when
from bot.domain.lifecycle import State
from bot.domain.records import Reservation
from tests.integration.reminder_steps import DM, audit_actions
from tests.integration.test_extensions import extend_value, reject_with
from tests.integration.test_purchasing import BLOCK, PLAN, approve
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest

H = timedelta(hours=1)
MIN = timedelta(minutes=1)
STEP = 10 * MIN
ABOUT_END = ("before-end", "checkpoint")


def walk(bot: BotUnderTest, until: datetime, step: timedelta = STEP) -> None:
    """Move the clock to `until` a step at a time, running what is due at each step (as a
    worker polling all along would). Steps land on multiples of `step` (every lead time
    and the 11:30 UTC ends are on the 10-minute grid), so nothing is late by the walk."""
    grid = step.total_seconds()
    while bot.clock.now() < until:
        now = bot.clock.now().timestamp()
        after = datetime.fromtimestamp((now // grid + 1) * grid, UTC)
        bot.clock.set(min(after, until))
        bot.wait()


def bought_and_active(bot: BotUnderTest, text: str, pick: str) -> Reservation:
    """Reserve, approve, and let the jobs buy it and track it until it is delivered."""
    request_id = submitted(bot, text, pick=pick)
    approve(bot, request_id)
    res = bot.record(request_id).reservation
    assert res is not None
    walk(bot, res.start - 25 * H, step=6 * H)
    walk(bot, res.start + 5 * MIN)
    assert bot.record(request_id).state is State.ACTIVE
    return res


def end_reminders(bot: BotUnderTest) -> list[tuple[str, str, str, str]]:
    """(kind, lead in seconds, end, text) of each before-end reminder the requester got,
    from the delivery key each message carries, as the fake Web API received them."""
    found = []
    for message in bot.fake.messages.get(DM, []):
        meta = message.get("metadata") or {}
        parts = str((meta.get("event_payload") or {}).get("key", "")).split(":")
        if len(parts) == 4 and parts[1] in ABOUT_END:
            found.append((parts[1], parts[2], parts[3], str(message.get("text", ""))))
    return found


def once_each(bot: BotUnderTest) -> Counter[tuple[str, str, str]]:
    seen = Counter((kind, lead, end) for kind, lead, end, _ in end_reminders(bot))
    assert all(n == 1 for n in seen.values()), seen
    late = [text for *_, text in end_reminders(bot) if "late:" in text]
    assert late == [], late
    return seen


def expected(
    res_end: datetime, kind_has_checkpoint: bool, leads_h: tuple[int, ...]
) -> set[tuple[str, str, str]]:
    end = str(int(res_end.timestamp()))
    out = {("before-end", str(h * 3600), end) for h in leads_h}
    if kind_has_checkpoint:
        out.add(("checkpoint", str(40 * 60), end))
    return out


def extend(bot: BotUnderTest) -> None:
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()


KINDS = [
    pytest.param(BLOCK, "capacity-block:0", True, id="capacity-block"),
    pytest.param(PLAN, "training-plan:0", False, id="training-plan"),
]


@pytest.mark.parametrize(("text", "pick", "checkpoint"), KINDS)
def test_an_extension_before_the_last_lead_sends_each_new_end_reminder_once(
    make_bot, text: str, pick: str, checkpoint: bool
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = bought_and_active(bot, text, pick)
    walk(bot, res.end - 24 * H + 5 * MIN)
    assert [k for k, *_ in end_reminders(bot)] == ["before-end"]  # the 1 d one, with Extend
    extend(bot)
    new = bot.record("R1").reservation
    assert new is not None and new.end == res.end + 24 * H
    walk(bot, new.end + 5 * MIN)
    seen = once_each(bot)
    assert set(seen) == expected(res.end, False, (24,)) | expected(new.end, checkpoint, (24, 2))
    # The old end's 2 h (and checkpoint) reminders were moved, not sent.
    assert audit_actions(bot).count("extension-bought") == 1


@pytest.mark.parametrize(("text", "pick", "checkpoint"), KINDS)
def test_an_extension_after_the_old_two_hour_reminder_still_reminds_of_the_new_end(
    make_bot, text: str, pick: str, checkpoint: bool
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = bought_and_active(bot, text, pick)
    walk(bot, res.end - 2 * H + 5 * MIN)
    assert [k for k, *_ in end_reminders(bot)] == ["before-end", "before-end"]
    extend(bot)
    new = bot.record("R1").reservation
    assert new is not None and new.end == res.end + 24 * H
    walk(bot, new.end + 5 * MIN)
    seen = once_each(bot)
    assert set(seen) == expected(res.end, False, (24, 2)) | expected(new.end, checkpoint, (24, 2))


def test_a_rejected_extension_leaves_the_end_reminders_as_they_were(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = bought_and_active(bot, BLOCK, "capacity-block:0")
    walk(bot, res.end - 24 * H + 5 * MIN)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    reject_with(bot, APPROVER, "not this time")
    walk(bot, res.end + 5 * MIN)
    seen = once_each(bot)
    assert set(seen) == expected(res.end, True, (24, 2))
    assert "reminder-dropped" not in audit_actions(bot)


@pytest.mark.parametrize(("text", "pick", "checkpoint"), KINDS)
def test_an_extension_approved_while_the_old_reminder_waits_drops_it_instead_of_late(
    make_bot, text: str, pick: str, checkpoint: bool
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = bought_and_active(bot, text, pick)
    walk(bot, res.end - 3 * H)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    # The worker falls behind: the old end's 2 h reminder is overdue, not sent yet, when
    # the extension is approved. Its purchase moves the end: that reminder no longer
    # makes sense (the new end gets its own), so it is dropped, not sent late.
    bot.clock.set(res.end - 2 * H + 10 * MIN)
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    new = bot.record("R1").reservation
    assert new is not None and new.end == res.end + 24 * H
    walk(bot, new.end + 5 * MIN)
    seen = once_each(bot)
    assert set(seen) == expected(res.end, False, (24,)) | expected(new.end, checkpoint, (24, 2))
    moved = [e.detail for e in bot.services.store.audit("R1") if e.action == "reminder-dropped"]
    assert moved == [f"before-end 2 h before {when(res.end)}: moved to {when(new.end)}"]


def test_a_reminder_held_for_an_extension_that_fails_goes_out_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = bought_and_active(bot, BLOCK, "capacity-block:0")
    walk(bot, res.end - 3 * H)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.market.conditions.price_factor = 1.2  # the purchase will be refused
    bot.clock.set(res.end - 2 * H + 10 * MIN)
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert bot.record("R1").reservation.end == res.end  # type: ignore[union-attr]
    walk(bot, res.end + 5 * MIN)
    reminders = end_reminders(bot)
    seen = Counter((kind, lead, end) for kind, lead, end, _ in reminders)
    assert set(seen) == expected(res.end, True, (24, 2)) and set(seen.values()) == {1}
    # The end did not move: the held 2 h reminder is sent (late: the worker was behind).
    (two_hours,) = [t for kind, lead, _, t in reminders if lead == str(2 * 3600)]
    assert "late: this reminder was due" in two_hours
    assert "reminder-dropped" not in audit_actions(bot)
