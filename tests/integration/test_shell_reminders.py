"""The whole life of a reservation in `gpu-bot shell`, as a newcomer would script it:
reserve, approve, the clock forward through each reminder, extend, the end, cleanup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.integration.test_shell import run_shell

START = (datetime.now(UTC) + timedelta(days=14)).strftime("%Y-%m-%d")


def test_the_whole_life_in_the_shell(tmp_path: Path) -> None:
    script = [
        f'/gpu reserve 2x p5.48xlarge 3d from {START} ec2 reason="load test"',
        "press 1",  # Submit for approval…
        "",
        "",
        "as alice",
        "press 1",  # Approve
        "y",
        "clock +1h",  # payment clears: scheduled
        "clock +13d",
        "clock +1d",  # the day before the start
        "clock +4h",  # started: delivered
        "clock +2d",  # a day before the end: Extend
        "as you",
        "press 1",  # Extend
        "as alice",
        "press 1",  # approve the extension
        "clock +1m",
        "clock +1d",
        "clock +20h",
        "clock +2h",  # two hours before the new end
        "clock +80m",  # the checkpoint warning, 40 minutes before the end
        "as you",
        "home",
        "clock +2d",  # ended: nothing left, cleaned up
    ]
    transcript = run_shell("\n".join(script) + "\n", tmp_path)
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
