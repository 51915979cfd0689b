"""What a second week in `gpu-bot shell` turned up: what people were not asked, not told
or could not see, as scripts fed to the real session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.services.test_shell_reminders import MIN, Clock
from tests.shell_runner import approved, run_shell_here, section

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


def test_status_folds_the_samples_and_pages_the_rest_of_the_history() -> None:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    script = [
        *approved(f'2x p5.48xlarge 3d from {day} ec2 reason="load test"'),
        "clock +15d",  # the block is active
        *[step for _ in range(3) for step in ("launch 1 into R1", "clock +1h", "stop 1 in R1")],
        "/gpu status R1",
        "/gpu status R1 history 2",
        "/gpu status R1 history x",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    first = out.split("you> /gpu status R1\n")[1].split("you> ")[0]
    assert "times by gpu-bot, the last: 0 running" in first
    assert "earlier line" in first and "hidden: `/gpu status R1 history 2` shows the next" in first
    second = out.split("you> /gpu status R1 history 2\n")[1].split("you> ")[0]
    earlier = [
        line for line in second.splitlines() if line.startswith("  › 2026") or " UTC " in line
    ]
    earlier = [line for line in earlier if " by " in line and line not in first]
    assert earlier, second  # the hidden lines, not shown on the first page
    wrong = out.split("you> /gpu status R1 history x\n")[1]
    assert "`/gpu status R12 history 2`" in wrong


def test_a_watch_stopped_by_an_approver_tells_its_watcher_who() -> None:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    script = [
        f"/gpu watch 2x p5.48xlarge 3d from {day} max=1/h",
        "as alice",
        "/gpu unwatch W1",
        "as you",
        "/gpu watches",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    told = [s for s in out.split("── ") if s.startswith("DM to @you")]
    assert told and "Watch W1 has ended (stopped by @alice)" in told[-1], out
    listed = out.split("you> /gpu watches")[-1]
    assert "*W1* · stopped by @alice" in listed or "W1 · stopped by @alice" in listed, listed


def test_submitting_what_i_already_submitted_warns_first() -> None:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    reserve = f'/gpu reserve 2x p5.48xlarge 3d from {day} ec2 reason="load test"'
    script = [reserve, "press 1", "", "", reserve, "press 1", ".", "/gpu list"]
    out = run_shell_here("\n".join(script) + "\n")
    first, second = out.split("modal opened for you: Submit for approval")[1:3]
    assert "already asked" not in first
    assert "You already asked for this type over an overlapping window: *R1* (pending" in second
    assert "Submit only if you need both." in second


def test_the_quote_shows_my_teams_budget_before_submit() -> None:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    out = run_shell_here(
        f'/gpu reserve 2x p5.48xlarge 3d from {day} ec2 reason="load test"\n',
        GPU_BOT_BUDGETS="ml-research=5000",
        GPU_BOT_TEAMS="ml-research=C0GENERAL",
    )
    quote = section(out, "ephemeral to you · message 1, updated in place")
    month = f"{day:%Y-%m}"
    assert f"ml-research: $0 of $5,000 held or paid in {month}; this request takes it to" in quote
    assert "[1] Submit for approval" in quote


def test_a_request_a_year_ahead_says_what_can_be_bought_and_when_to_watch() -> None:
    day = (datetime.now(UTC) + timedelta(days=365)).date()
    out = run_shell_here(f'/gpu reserve 2x p5.48xlarge 3d from {day} ec2 reason="launch"\n')
    quote = section(out, "ephemeral to you · message 1, updated in place")
    earliest = (datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(weeks=8)).date()
    assert ":warning: it starts more than 8 weeks from now" in quote
    assert f"before {earliest}" in quote and f"From {earliest}, `/gpu watch`" in quote
