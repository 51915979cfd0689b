"""A newcomer's first week in `gpu-bot shell`, as scripts fed to the real process: what
follows a click shows at once, piped forms end where the script's commands begin."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.services.test_shell_reminders import MIN, Clock
from tests.shell_runner import run_shell_here, section

H = timedelta(hours=1)


def _start_day() -> datetime:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    return datetime(day.year, day.month, day.day, 11, 30, tzinfo=UTC)


def test_what_follows_an_extensions_approval_shows_at_once() -> None:
    now = datetime.now(UTC)
    start = _start_day()
    end = start + timedelta(days=3)
    clock = Clock(now)
    script = [
        f'/gpu reserve 2x p5.48xlarge 3d from {start.date()} ec2 reason="load test"',
        "press 1",
        "",
        "",
        "as alice",
        "press 1",
        "y",
        clock.to(end - 24 * H + MIN),  # a day before the end: the reminder with Extend
        "as you",
        "press 1",  # Extend
        "y",  # asked first: it spends once approved
        "as alice",
        "press 1",  # approve the extension: its amount is put to her
        "y",
        "whoami",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    approved = out.split("alice> press 1")[-1].split("alice> whoami")[0]
    assert "(y) or" in approved and approved.count("? y\n") == 1
    # The extension is bought and the requester told before anything else is typed, as
    # in Slack; the clock was not moved to get there.
    assert "Approved: extending R1 now." in approved
    assert "Extension 1: *bought* · approved by @alice" in approved
    told = [s for s in approved.split("── ") if s.startswith("DM to @you")]
    assert told and "is extended to" in told[-1], approved


def test_a_piped_form_ends_where_the_scripts_commands_begin() -> None:
    day = _start_day().date()
    script = [
        f'/gpu reserve 2x g5.xlarge 3d from {day} ec2 interruptible reason="load test"',
        "press 1",  # Submit for approval…: the form asks the option, then the reason
        "1",  # On-Demand
        "as alice",  # the script's next command, not the reason
        "whoami",
        "/gpu status R1",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    assert "Reason for the approvers [load test]: as alice\n" in out
    assert "  ! `as alice` is a command, not an answer: it runs next." in out
    assert "Form closed without submitting." in out
    assert "alice> whoami\nYou are alice (U0ALICE), an approver." in out
    status = out.split("alice> /gpu status R1", 1)[1]
    assert ":memo: *Quoted*" in status  # not submitted with "as alice" as its reason
    assert "as alice" not in status


def test_a_value_that_only_starts_like_a_command_is_kept() -> None:
    day = _start_day().date()
    script = [
        f"/gpu reserve 2x g5.xlarge 3d from {day} ec2",
        "press 1",
        "",
        "as soon as the launch is fixed",  # a reason, not `as NAME`
    ]
    out = run_shell_here("\n".join(script) + "\n")
    assert "is a command" not in out
    card = section(out, "#approvals · message 2")
    assert "Why: “as soon as the launch is fixed”" in card
