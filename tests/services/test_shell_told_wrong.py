"""What a second week in `gpu-bot shell` told people wrong, as scripts fed to the real
session: each test is one thing someone was told, and what they are told now."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.shell.console_api import COMMAND_CHANNEL
from tests.shell_runner import approved, run_shell_here, section

ON_DEMAND_FOR_A_DAY = approved('1x p5.48xlarge 1d from tomorrow ec2 reason="eval"', pick="1")


def test_a_blocks_instance_is_terminated_by_aws_not_left_for_cleanup() -> None:
    script = [
        *approved('2x p5.48xlarge 2d from tomorrow ec2 reason="eval"'),
        "clock +36h",  # the block is active
        "launch 1 into R1",
        "clock +2d",  # AWS terminated it 30 minutes before the end
        "clock +5m",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    ended = out.split("you> clock +2d", 1)[1]
    assert "Request R1 has ended, and this is still there" not in ended
    assert "Still costing" not in ended
    assert "Request R1 is cleaned up: nothing tagged for it is left." in ended
    assert ":bar_chart: Request R1 has ended: 2 x p5.48xlarge (Capacity Block)." in ended


def test_leftovers_handed_to_the_approvers_have_their_own_heading_and_buttons() -> None:
    script = [
        *ON_DEMAND_FOR_A_DAY,
        "clock +36h",
        "launch 1 into R1",  # left running past the window
        "clock +2d",  # the cleanup prompt
        "press 3",  # Not mine
        "as alice",
        "home",
        "/gpu list waiting",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    for shown in (section(out, "App Home of @alice"), out.split("alice> /gpu list waiting")[1]):
        assert "Waiting for approval" not in shown
        leftovers = shown.split("*Left after the end, handed to the approvers", 1)[1]
        assert "*R1*" in leftovers and "[1] Clean up now  [2] Keep for a day" in leftovers
    assert "*Left after the end, handed to the approvers (1)*" in section(out, "App Home of @alice")


def test_a_type_the_region_does_not_sell_is_refused_before_quoting_naming_where() -> None:
    script = [
        '/gpu reserve 1x p5.48xlarge 1d from tomorrow eu-west-1 ec2 reason="eval"',
        "/gpu quote 1x p5.48xlarge 1d from tomorrow eu-west-1",
        "/gpu list",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    refused = section(out, "ephemeral to you · message 1, updated in place")
    assert "p5.48xlarge is not sold in eu-west-1 (EC2 DescribeInstanceTypeOfferings)" in refused
    assert "it is sold in " in refused and "us-east-1" in refused
    assert "ask with region=us-east-1" in refused and "Nothing was quoted or stored" in refused
    assert "Nothing fits" not in out and "Submit" not in out
    quoted = section(out, "ephemeral to you · message 2, updated in place")
    assert "p5.48xlarge is not sold in eu-west-1" in quoted
    listed = out.split("you> /gpu list", 1)[1]
    assert "No requests yet." in listed and "R1" not in listed


def test_a_watch_refusal_never_says_the_type_is_sold_where_it_says_it_is_not() -> None:
    script = [
        "/gpu watch 100x p5.48xlarge 3d from tomorrow ec2",
        "/gpu watch 8x p5.48xlarge 3d from tomorrow ec2 eu-west-1",
        "/gpu watch 8x g5.48xlarge 3d from tomorrow ec2",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    too_many = section(out, "ephemeral to you · message 1")
    assert "AWS does not sell 100x p5.48xlarge for 3 days as a capacity block" in too_many
    assert "1 to 64 instances" in too_many and "sold" not in too_many.split("block")[1]
    elsewhere = section(out, "ephemeral to you · message 2")
    assert "does not sell p5.48xlarge as a capacity block in eu-west-1" in elsewhere
    assert "it is sold as one in us-east-1" in elsewhere and "region=us-east-1" in elsewhere
    assert "eu-west-1" not in elsewhere.split("sold as one in")[1]
    nowhere = section(out, "ephemeral to you · message 3")
    assert "no region is known to sell it as one" in nowhere


def test_a_watch_until_a_day_shows_that_day_as_the_default_does() -> None:
    day = (datetime.now(UTC) + timedelta(days=14)).date()
    script = [
        f"/gpu watch 8x p5.48xlarge 3d from {day} ec2 until={day}",
        f"/gpu watch 8x p5.48xlarge 3d from {day} ec2",  # the default: the latest start's day
        "/gpu watches",
    ]
    out = run_shell_here("\n".join(script) + "\n")
    shown = f"until the end of {day} UTC"
    given, default = out.split("you> /gpu watch ")[1:3]
    assert shown in given.split("\n")[2] and shown in default.split("\n")[2]
    assert out.split("you> /gpu watches", 1)[1].count(shown) == 2
    assert f"{day + timedelta(days=1)} 00:00" not in out and "23:59" not in out


TEAM = {"GPU_BOT_BUDGETS": "ml-research=50000", "GPU_BOT_TEAMS": "ml-research=C0GENERAL"}
QUOTE = "/gpu quote 2x p5.48xlarge 2d from tomorrow ec2"


def test_prices_are_cached_on_the_sandbox_clock() -> None:
    out = run_shell_here("\n".join([QUOTE, "clock +5m", QUOTE, "clock +88h", QUOTE]) + "\n")
    first, soon, later = out.split(f"you> {QUOTE}")[1:]
    assert "(cached" not in first
    assert "Pricing API (AmazonEC2) (cached 5m ago)" in soon.split("you> clock")[0]
    assert "(cached" not in later and "_price from sandbox: Pricing API (AmazonEC2)_" in later


def test_a_report_card_counts_in_the_teams_learned_figure_at_the_next_quote() -> None:
    script = [
        QUOTE,  # nothing measured yet: 100%
        *approved('2x p5.48xlarge 2d from tomorrow ec2 reason="eval"'),
        "clock +36h",
        "launch 2 into R1",
        "clock +2d",
        "clock +5m",  # the report card
        QUOTE,
    ]
    out = run_shell_here("\n".join(script) + "\n", **TEAM)
    first, last = out.split(f"you> {QUOTE}")[1:]
    assert "ran at" not in first
    assert ":bar_chart: Request R1 has ended" in out.split(f"you> {QUOTE}")[1]
    assert "your team ml-research's last one ran at " in last


def test_the_monthly_summary_is_posted_when_the_sandbox_clock_crosses_the_first() -> None:
    now = datetime.now(UTC)
    first = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    minutes = int((first - now).total_seconds() // 60) + 5
    out = run_shell_here(f"{QUOTE}\nclock +{minutes}m\n", **TEAM)
    crossed = out.split("you> clock", 1)[1]
    assert f"== GPU spend in {now:%Y-%m}: $0.00 held or paid ==" in crossed
    assert "*ml-research* held $0.00 · paid $0.00 · $0.00 of $50,000.00 budget" in crossed


def test_the_readme_names_the_shells_channel_and_a_team_mapped_by_it_takes_its_requests() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    channel = COMMAND_CHANNEL[0]
    assert f"typed in the channel\n`{channel}`" in readme
    line = next(w for w in readme.split("`") if w.startswith("GPU_BOT_TEAMS=ml-research=C"))
    settings = dict(pair.split("=", 1) for pair in line.split()[:2])
    out = run_shell_here(f"{QUOTE}\n", **settings)
    assert ":moneybag: ml-research: $0 of $50,000 held or paid" in out


BLOCK_APPROVED = [
    '/gpu reserve 2x p5.48xlarge 2d from tomorrow ec2 reason="eval"',
    "press 1",
    "",
    "",
    "as alice",
    "press 1",
    "y",
]


def test_the_decision_dms_show_the_window_bought_not_the_one_asked() -> None:
    out = run_shell_here("\n".join(BLOCK_APPROVED) + "\n")
    dms = [section(out, h) for h in re.findall(r"── (DM to @you · message \d+) ──", out)]
    approved, pending = dms[:2]
    for dm in (approved, pending):
        assert re.search(r"\(2x p5\.48xlarge \S+ 11:30 UTC → \S+ 11:30 UTC \(us-east-1\)\)", dm)
        assert "00:00 UTC" not in dm


def test_an_approved_on_demand_request_is_cancelled_as_help_says() -> None:
    out = run_shell_here("\n".join(["/gpu help", *ON_DEMAND_FOR_A_DAY, "/gpu cancel R1"]) + "\n")
    helped = out.split("you> /gpu help", 1)[1].split("you> ", 1)[0]
    assert "or an approved On-Demand or Spot one before its window opens" in helped
    # The amount alice confirmed reads as English: On-Demand instances, not "an On-Demand".
    assert "for 1x p5.48xlarge as On-Demand instances (request R1)?" in out
    cancelled = out.split("you> /gpu cancel R1", 1)[1]
    assert "cancelled" in cancelled.lower() and "only requests" not in cancelled


def test_deploy_and_cleanup_of_a_request_that_does_not_exist_say_so() -> None:
    out = run_shell_here("/gpu deploy R999\n/gpu cleanup R999\n")
    assert "There is no request R999: `/gpu list` shows yours." in section(
        out, "ephemeral to you · message 1"
    )
    assert "There is no request R999" in section(out, "ephemeral to you · message 2")


def test_home_and_a_watch_match_name_kinds_in_words() -> None:
    script = [
        *BLOCK_APPROVED,
        "as you",
        "home",
    ]
    home = section(run_shell_here("\n".join(script) + "\n"), "App Home of @you")
    assert "(before the start)" in home and "before-start" not in home
