"""What a second week in `gpu-bot shell` turned up: what people were not asked, not told
or could not see, as scripts fed to the real session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.services.test_shell_reminders import MIN, Clock
from tests.shell_runner import run_shell_here, section

H = timedelta(hours=1)


def test_an_unknown_team_is_refused_naming_the_known_ones() -> None:
    out = run_shell_here(
        "as alice\n/gpu spend nosuchteam\n/gpu spend\n",
        GPU_BOT_BUDGETS="ml-research=5000",
        GPU_BOT_TEAMS="ml-research=C0GENERAL",
    )
    refused = section(out, "ephemeral to alice · message 1")
    assert 'There is no team "nosuchteam"' in refused and "the teams are ml-research" in refused
    listed = section(out, "ephemeral to alice · message 2")
    assert "ml-research" in listed and "$0.00" in listed


def test_my_list_shows_my_extension_waiting_for_approval() -> None:
    now = datetime.now(UTC)
    day = (now + timedelta(days=14)).date()
    start = datetime(day.year, day.month, day.day, 11, 30, tzinfo=UTC)
    end = start + timedelta(days=3)
    clock = Clock(now)
    script = [
        f'/gpu reserve 2x p5.48xlarge 3d from {day} ec2 reason="load test"',
        "press 1",
        "",
        "",
        "as alice",
        "press 1",
        "y",
        clock.to(end - 24 * H + MIN),  # a day before the end: the reminder with Extend
        "as you",
        "press 1",  # Extend
        "y",
        "/gpu list",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    listed = out.split("you> /gpu list")[-1]
    assert "↳ extension 1: 1 d more to" in listed
    assert "for $1,661.18, waiting for approval" in listed
