"""The README's walkthroughs, run in `gpu-bot shell` exactly as the README writes them,
on whatever day the test runs: what they promise must happen."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.test_shell import run_shell

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def walkthrough() -> str:
    block = README.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->")[0]
    (script,) = re.findall(r"```\n(.*?)```", block, re.S)
    return str(script)


def test_the_deploy_walkthrough_works_as_written_whatever_the_date(tmp_path: Path) -> None:
    script = walkthrough()
    assert "from tomorrow" in script and not re.search(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}", script)
    out = run_shell(script, tmp_path)
    assert "Submitted R1" in out
    assert ":white_check_mark: *Approved* · approved by @alice" in out
    assert "[2] Deploy an endpoint" in out  # the plan is active after `clock +36h`
    assert "Deployment D1 started: endpoint `gpu-r1-ep1` on R1" in out
    assert "Deployment D1 of R1: endpoint `gpu-r1-ep1` is in service" in out
    before_cleanup, after_cleanup = out.split("you> /gpu cleanup D1", 1)
    assert "Endpoint `gpu-r1-ep1`: InService" in before_cleanup.split("you> /gpu status D1")[1]
    final = after_cleanup.split("you> /gpu status D1", 1)[1]
    assert "is cleaned up" in final
    assert "Endpoint configuration `gpu-r1-ep1`: deleted" in final
    assert "Traceback" not in out and "is a command, not an answer" not in out


def watch_story() -> str:
    block = README.split("<!-- watch-story:start -->", 1)[1].split("<!-- watch-story:end -->")[0]
    (script,) = re.findall(r"```\n(.*?)```", block, re.S)
    return str(script)


def utilisation_story() -> str:
    block = README.split("<!-- utilisation:start -->", 1)[1].split("<!-- utilisation:end -->")[0]
    (script,) = re.findall(r"```\n(.*?)```", block, re.S)
    return str(script)


def test_the_watch_story_works_as_written_whatever_the_date(tmp_path: Path) -> None:
    script = watch_story()
    assert "from tomorrow" in script and not re.search(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}", script)
    out = run_shell(script, tmp_path)
    watching, rest = out.split("you> /gpu status W1", 1)
    assert ":eyes: Watching W1: a capacity block for 8x p5.48xlarge" in watching
    before_release, after_release = rest.split("you> market release", 1)
    assert "Nothing offered for it yet" in before_release
    assert "found it" not in before_release
    assert ":dart: *Watch W1 found it:* a Capacity Block of 8x `p5.48xlarge`" in after_release
    assert "[1] Submit for approval…" in after_release
    assert "Submitted R1" in after_release
    assert ":white_check_mark: *Approved* · approved by @alice" in after_release
    final = after_release.split("you> /gpu status W1", 1)[1]
    assert "1 match sent" in final and "match sent · Capacity Block" in final
    assert "Traceback" not in out and "is a command, not an answer" not in out


def _money(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def test_the_utilisation_story_works_as_written_whatever_the_date(tmp_path: Path) -> None:
    script = utilisation_story()
    assert "from tomorrow" in script and not re.search(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}", script)
    out = run_shell(script, tmp_path)
    assert "Traceback" not in out and "Unknown command" not in out
    assert "Launched 2 x p5.48xlarge into cr-" in out
    home = out.split("you> home", 1)[1].split("you> stop 2 in R1", 1)[0]
    assert "Utilisation so far: " in home and "2 running now" in home
    assert "Stopped 2 in R1; 0 still running." in out
    idle = out.split("you> clock +3h", 1)[1].split("you> launch 1 into R1", 1)[0]
    assert idle.count("Nothing has run in request R1's Capacity Block for 3 h") == 1
    ended = out.split("you> clock +2d", 1)[1]
    assert ended.count(":bar_chart: Request R1 has ended: 2 x p5.48xlarge (Capacity Block).") == 2
    paid = _money(re.findall(r"Paid: (\$[0-9,.]+)", ended)[0])
    used, billed = map(float, re.findall(r"Used: ([0-9.]+) of ([0-9.]+) instance-hours", ended)[0])
    on_demand = _money(re.findall(r"On-Demand for the hours used: (\$[0-9,.]+)", ended)[0])
    assert billed == 96.0 and 0 < used < billed
    verdict = f"On-Demand would have been ${paid - on_demand:,.2f} cheaper."
    if on_demand > paid:
        verdict = f"The block saved ${on_demand - paid:,.2f}."
    assert ended.count(verdict) == 2
    # AWS terminated the instance left running 30 minutes before the end: nothing to clean.
    assert ":broom: Request R1 has ended" not in ended
    assert "Request R1 is cleaned up: nothing tagged for it is left." in ended
