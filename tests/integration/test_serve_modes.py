"""`gpu-bot serve` picks Socket Mode when SLACK_APP_TOKEN is set, HTTP otherwise: each
mode is run for real, as a separate process, and driven over its own transport."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from bot import server
from bot.cli import main
from bot.cli.serve_cmd import default_workers
from bot.config import Settings
from tests import slack_payloads as payloads
from tests.conftest import free_port
from tests.serving import serve_env
from tests.slack_fake import FakeSlack
from tests.socket_mode_fake import FakeSocketMode

BASE = {
    "SLACK_BOT_TOKEN": "xoxb-test",
    "GPU_BOT_APPROVERS": "U0APPROVER",
    "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
}
SECRET = "modes-test-secret"


@contextmanager
def _serving(env: dict[str, str], port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """`gpu-bot serve` in its own process until its /healthz answers; SIGTERM after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--port", str(port), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        else:
            proc.kill()
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"gpu-bot serve did not come up:\n{out}")
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_app_token_means_socket_mode_with_a_health_port(
    fake_slack: FakeSlack, redis_url: str, namespace: str
) -> None:
    slack = FakeSocketMode()
    fake_slack.socket_url = slack.url
    env = serve_env(
        fake_slack.api_url,
        SLACK_APP_TOKEN="xapp-1-A0GPUBOT-1-test",
        REDIS_URL=redis_url,
        GPU_BOT_NAMESPACE=namespace,
    )
    try:
        with _serving(env, free_port(), "--no-worker") as proc:
            slack.wait_connections(1)
            body, _ctype = payloads.slash_command("help", "U0REQUESTER", "http://unused/")
            form = {k: v[0] for k, v in parse_qs(body).items()}
            ack = slack.wait_ack(slack.send("slash_commands", form))
            assert "/gpu reserve" in json.dumps(ack.get("payload"))
            assert _children(proc.pid) == []  # one process: no gunicorn in this mode
        assert len(fake_slack.of("apps.connections.open")) >= 1
    finally:
        slack.close()


def test_without_app_token_it_serves_http_in_one_process_on_memory(
    fake_slack: FakeSlack,
) -> None:
    port = free_port()
    env = serve_env(fake_slack.api_url, SLACK_SIGNING_SECRET=SECRET, REDIS_URL="memory://")
    with _serving(env, port) as proc:
        body, ctype = payloads.slash_command("help", "U0REQUESTER", "http://unused/")
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/slack/events",
            data=body.encode(),
            headers={"Content-Type": ctype, **payloads.sign(SECRET, body)},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert "/gpu reserve" in reply.read().decode()
        assert len(_children(proc.pid)) == 1  # memory:// lives in one process
    assert fake_slack.of("apps.connections.open") == []


def test_http_processes_default_to_the_cpu_count_on_redis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert default_workers(Settings(REDIS_URL="redis://127.0.0.1:6379/0")) == 6  # type: ignore[call-arg]
    assert default_workers(Settings(REDIS_URL="memory://")) == 1  # type: ignore[call-arg]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> list[str]:
    """Records any server that starts: the refusals below must start none."""
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []
    for name in ("serve_socket_mode", "start_health_server", "serve_http"):
        monkeypatch.setattr(server, name, lambda *_a, _n=name, **_k: seen.append(_n))
    return seen


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["serve", "--workers", "2"], "--workers above 1"),
        (["serve", "--no-worker"], "memory:// is private to one process"),
        (["worker"], "memory:// is private to one process"),
    ],
)
def test_more_than_one_process_needs_a_shared_store(
    monkeypatch: pytest.MonkeyPatch,
    started: list[str],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    said: str,
) -> None:
    for key, value in (BASE | {"SLACK_SIGNING_SECRET": "s"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(args) == 1
    assert said in capsys.readouterr().err
    assert started == []
