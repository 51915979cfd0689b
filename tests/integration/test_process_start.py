"""Starting `gpu-bot serve` and `gpu-bot worker` wrong: one clear message and an exit,
or (Redis down) one line per attempt with a growing wait, never a wall of tracebacks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from tests.conftest import free_port
from tests.slack_fake import FakeSlack

SETTINGS = {
    "SLACK_SIGNING_SECRET": "serve-test-secret",
    "GPU_BOT_APPROVERS": "U0APPROVER",
    "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPU_BOT_"))}
    return env | SETTINGS | extra


def test_serve_with_a_token_slack_refuses_says_so_in_one_line(fake_slack: FakeSlack) -> None:
    fake_slack.refused_tokens.add("xoxb-revoked")
    env = _env(SLACK_BOT_TOKEN="xoxb-revoked", SLACK_API_URL=fake_slack.api_url)
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert out.splitlines() == [
        "gpu-bot: cannot serve: Slack refused SLACK_BOT_TOKEN (invalid_auth): use the app's "
        "Bot User OAuth Token (xoxb-…, under OAuth & Permissions) and check the app is installed"
    ]
    assert "xoxb-revoked" not in out


def test_the_worker_refuses_to_start_without_what_it_needs(redis_url: str) -> None:
    env = _env(REDIS_URL=redis_url)
    del env["GPU_BOT_APPROVAL_CHANNEL"]
    done = subprocess.run(
        [sys.executable, "-m", "bot", "worker"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "gpu-bot: cannot run the worker:",
        "  SLACK_BOT_TOKEN is needed: the jobs post to Slack",
        "  GPU_BOT_APPROVAL_CHANNEL is needed: where request cards are posted",
    ]


def test_the_worker_backs_off_while_redis_is_down(fake_slack: FakeSlack) -> None:
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    env = _env(SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=fake_slack.api_url, REDIS_URL=nobody)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Read until four failed turns are logged (however slow the start on a busy
    # machine), then stop it: the waits between them must grow.
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if sum("worker loop failed" in seen for seen in lines) >= 4:
            break
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    out = "".join(lines) + rest
    assert proc.returncode == 0, out
    assert time.monotonic() - started < 10, "SIGTERM must stop the wait at once"
    assert "Traceback" not in out
    attempts = [line for line in out.splitlines() if "worker loop failed" in line]
    waits = [float(w) for w in re.findall(r"trying again in ([\d.]+) s", out)]
    # 0.2, 0.4, 0.8, 1.6 s: growing, not one every 0.2 s.
    assert 4 <= len(attempts) <= 5, out
    assert len(waits) == len(attempts)
    assert waits == sorted(waits) and waits[-1] >= 4 * waits[0], waits
    assert "Connection refused" in attempts[0] or "Error" in attempts[0], attempts[0]
