"""The README's capacity outlook story, run in the shell exactly as written (its
environment line too), whatever the date: a month of sandbox days, the outlook, its chart
in a DM thread, the quote's hint and its Watch button."""

from __future__ import annotations

import re
from pathlib import Path

from tests.shell_runner import run_shell_here, section

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def story() -> tuple[dict[str, str], str]:
    block = README.split("<!-- outlook-story:start -->", 1)[1].split("<!-- outlook-story:end -->")[
        0
    ]
    command, script = re.findall(r"```(?:sh)?\n(.*?)```", block, re.S)
    env = dict(re.findall(r'([A-Z_]+)="([^"]*)"', command))
    return env, script


def test_the_outlook_story_works_as_written_whatever_the_date() -> None:
    env, script = story()
    assert env == {"GPU_BOT_OUTLOOK_SHAPES": "16x p5.48xlarge 3d us-east-1 ec2"}
    assert "from tomorrow" in script and not re.search(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}", script)
    out = run_shell_here(script, **env)
    assert "30 sandbox days passed" in out and "the outlook scan made 30 searches" in out
    # Message numbers depend on the date: crossing the 1st posts the month's summary first.
    (heading,) = re.findall(
        r"── (ephemeral to you · message \d+) ──", out.split("you> /gpu quote")[0]
    )
    shown = section(out, heading)
    assert "Capacity outlook: 16x p5.48xlarge, 3-day, us-east-1, last 90 days" in shown
    assert "30 searches on 30 days" in shown
    assert re.search(r"A start within 1 week: seen on [0-9]+ of 30 days searched", shown)
    assert "Typical lead time: usually" in shown
    assert "Price per instance-hour: lowest $" in shown
    assert "Regions seen most: us-east-1 (" in shown
    assert "What this account's searches saw, not AWS's capacity." in shown
    (thread,) = re.findall(r"── (file in the thread of message \d+) ──", out)
    assert "[image] Outlook: 16x p5.48xlarge, 3-day, us-east-1" in section(out, thread)
    quote = out.split("you> /gpu quote", 1)[1].split("you> press 1", 1)[0]
    assert re.search(
        r":crystal_ball: 16x p5.48xlarge 3-day blocks in us-east-1 were seen on [0-9]+ of "
        r"the last 30 days searched, usually [0-9]+ to [0-9]+ days ahead",
        quote,
    )
    assert "[1] Watch for one…" in quote
    watching = out.split("you> press 1", 1)[1]
    assert ":eyes: Watching W1: a capacity block for 16x p5.48xlarge" in watching
    assert "How likely a match is: such an offering starting within 1 week was seen on" in watching


SHAPES = {"GPU_BOT_OUTLOOK_SHAPES": "16x p5.48xlarge 3d us-east-1 ec2"}


def test_with_too_little_seen_the_quote_says_nothing_and_the_watch_says_so() -> None:
    out = run_shell_here(
        "/gpu quote 16x p5.48xlarge 3d from tomorrow us-east-1 ec2\n"
        "/gpu watch 16x p5.48xlarge 3d from tomorrow us-east-1 ec2\n",
        **SHAPES,
    )
    assert ":crystal_ball:" not in out and "Watch for one" not in out
    assert "How likely a match is: not enough seen yet (" in out


def test_a_block_found_no_sooner_than_usual_gets_no_hint() -> None:
    # Without churn the scan sees blocks from the next day on every day: a quote from
    # tomorrow finds one and is not sooner than usual, so there is nothing to add.
    out = run_shell_here(
        "days 6\n/gpu quote 16x p5.48xlarge 3d from tomorrow us-east-1 ec2\n", **SHAPES
    )
    assert "the outlook scan made 6 searches" in out
    assert ":star: *Recommended: Capacity Block*" in out
    assert ":crystal_ball:" not in out
