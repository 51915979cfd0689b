"""The whole life of a reservation in `gpu-bot shell`, as a newcomer would script it:
reserve, approve, the clock forward through each reminder, extend, the end, cleanup."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from tests.shell_runner import run_shell_here

H = timedelta(hours=1)
MIN = timedelta(minutes=1)


class Clock:
    """`clock +Nm` lines reaching moments given as times (the shell starts at real now)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def to(self, moment: datetime) -> str:
        minutes = max(math.ceil((moment - self.now) / MIN), 1)
        self.now += minutes * MIN
        return f"clock +{minutes}m"


def test_the_whole_life_in_the_shell() -> None:
    # Taken when the test runs, not when it is collected: in a full run the shell starts
    # minutes after collection, and the clock would land past the checkpoint warning's
    # last useful moment (30 minutes before the end), where it is dropped as too late.
    now = datetime.now(UTC)
    start_day = (now + timedelta(days=14)).date()
    start = datetime(start_day.year, start_day.month, start_day.day, 11, 30, tzinfo=UTC)
    end = start + timedelta(days=3)  # the block bought: 3 days to 11:30 UTC
    new_end = end + timedelta(days=1)  # after the one-day extension
    clock = Clock(now)
    script = [
        f'/gpu reserve 2x p5.48xlarge 3d from {start_day} ec2 reason="load test"',
        "press 1",  # Submit for approval…
        "",
        "",
        "as alice",
        "press 1",  # Approve
        "y",
        clock.to(now + H),  # payment clears: scheduled
        clock.to(start - 23 * H),  # the day before the start
        clock.to(start + 6 * H),  # started: tracking sees it delivered
        clock.to(end - 24 * H + MIN),  # a day before the end: Extend
        "as you",
        "press 1",  # Extend
        "y",  # asked first: it spends once approved
        "as alice",
        "press 1",  # approve the extension: its amount is put to her
        "y",
        clock.to(end - 24 * H + 3 * MIN),
        clock.to(new_end - 24 * H + 3 * MIN),
        clock.to(new_end - 2 * H + 3 * MIN),  # two hours before the new end
        clock.to(new_end - 38 * MIN),  # the checkpoint warning, 40 minutes before the end
        "as you",
        "home",
        clock.to(new_end + 2 * 24 * H),  # ended: nothing left, cleaned up
    ]
    transcript = run_shell_here("\n".join(script) + "\n")
    assert "starts at *" in transcript and "Launch into the reservation" in transcript
    assert "is delivered: ends *" in transcript
    assert "[1] Extend ($" in transcript
    assert "Extension 1: *bought* · approved by @alice" in transcript
    assert "is extended to" in transcript and "Your reminders moved with it." in transcript
    assert "save your checkpoints now" in transcript
    assert "*Your reservations*" in transcript and "no more reminders before the end" in transcript
    assert "is cleaned up: nothing tagged for it is left." in transcript
    # Each reminder once.
    assert transcript.count("is delivered: ends") == 1
    assert transcript.count("save your checkpoints now") == 1
