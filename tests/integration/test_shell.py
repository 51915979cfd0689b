"""`gpu-bot shell` as a newcomer runs it: the console script in a child process, fed a
script on stdin, with no Slack, AWS or Redis configured. The stories themselves run in
process, in tests/services/test_shell_approval.py; here is what only the command shows:
its banner, its echo, its environment and .env, a clean stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.shell_runner import section

# Two weeks ahead: inside the sandbox's Capacity Block horizon, after the approval deadline.
START = (datetime.now(UTC) + timedelta(days=14)).strftime("%Y-%m-%d")
RESERVE = f'/gpu reserve 2x p5.48xlarge 3d from {START} ec2 reason="load test <!channel> & co"'


def run_shell(script: str, cwd: Path) -> str:
    """The transcript (stdout) of `python -m bot shell < script`; stderr must stay empty."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "GPU_BOT_", "AWS_", "REDIS_"))
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot", "shell"],
        input=script,
        env=env | {"HOME": str(cwd)},
        cwd=cwd,  # no .env of the repository
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "\x1b" not in done.stdout  # not a terminal: no escape codes
    return done.stdout


# Reserve, submit, the requester's refused Approve, an approver's Approve, the status.
APPROVAL_SCRIPT = "\n".join(
    [
        RESERVE,
        "press 1",  # Submit for approval…: opens the form
        "",  # Option: keep the recommended one
        "",  # Reason: keep the one typed in the command
        "press 1",  # Approve, as the requester: refused before any question
        "as alice",
        "show 2",  # the card again: the refusal had no buttons to press
        "press 1",  # Approve, as an approver: the amount is put to her
        "y",
        "/gpu status R1",
    ]
)


@pytest.fixture(scope="module")
def approval_flow(tmp_path_factory: pytest.TempPathFactory) -> str:
    return run_shell(APPROVAL_SCRIPT + "\n", tmp_path_factory.mktemp("shell"))


def test_commands_are_echoed_after_their_prompt(approval_flow: str) -> None:
    assert f"you> {RESERVE}\n" in approval_flow
    assert "alice> press 1\n" in approval_flow
    assert approval_flow.startswith("gpu-bot shell: the real bot")
    assert "approvers: alice (U0ALICE), bob (U0BOB)" in approval_flow


def test_approvers_from_the_environment_are_said_in_the_banner(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GPU_BOT_APPROVERS=U0CAROL\n")
    out = run_shell("quit\n", tmp_path)
    assert (
        "approvers: U0CAROL (from GPU_BOT_APPROVERS in the environment or .env, in place of "
        "the demo's alice and bob; unset it to approve as them)."
    ) in out


__all__ = ["APPROVAL_SCRIPT", "RESERVE", "START", "run_shell", "section"]
