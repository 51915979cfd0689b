"""`gpu-bot serve` picks Socket Mode when SLACK_APP_TOKEN is set, HTTP otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from bot import server
from bot.cli import main

BASE = {
    "SLACK_BOT_TOKEN": "xoxb-test",
    "GPU_BOT_APPROVERS": "U0APPROVER",
    "GPU_BOT_APPROVAL_CHANNEL": "C0APPROVALS",
}


@pytest.fixture
def calls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, fake_slack: Any
) -> list[tuple[str, Any]]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.api_url)  # auth.test at start-up
    # serve sets it for its gunicorn workers: put back what this process had after the test.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    seen: list[tuple[str, Any]] = []
    monkeypatch.setattr(
        server, "serve_socket_mode", lambda app, token: seen.append(("socket", token))
    )
    monkeypatch.setattr(
        server, "start_health_server", lambda port, healthy, **_: seen.append(("health", port))
    )
    monkeypatch.setattr(
        server,
        "serve_http",
        lambda make, port, threads, workers, **_: seen.append(("http", port, workers)),
    )
    return seen


def test_app_token_means_socket_mode_with_a_health_port(
    monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, Any]], redis_url: str, namespace: str
) -> None:
    shared = {"REDIS_URL": redis_url, "GPU_BOT_NAMESPACE": namespace}
    for key, value in (BASE | shared | {"SLACK_APP_TOKEN": "xapp-1-test"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    assert main(["serve", "--port", "3999", "--no-worker"]) == 0
    assert calls == [("health", 3999), ("socket", "xapp-1-test")]


def test_without_app_token_it_serves_http(
    monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, Any]]
) -> None:
    for key, value in (BASE | {"SLACK_SIGNING_SECRET": "s"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    assert main(["serve", "--port", "3998"]) == 0
    assert calls == [("http", 3998, 1)]  # memory:// lives in one process


def test_http_processes_default_to_the_cpu_count_on_redis(
    monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, Any]], redis_url: str, namespace: str
) -> None:
    shared = {"REDIS_URL": redis_url, "GPU_BOT_NAMESPACE": namespace}
    for key, value in (BASE | shared | {"SLACK_SIGNING_SECRET": "s"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert main(["serve", "--port", "3997", "--no-worker"]) == 0
    assert main(["serve", "--port", "3997", "--no-worker", "--workers", "3"]) == 0
    assert calls == [("http", 3997, 6), ("http", 3997, 3)]


def test_more_than_one_process_needs_a_shared_store(
    monkeypatch: pytest.MonkeyPatch,
    calls: list[tuple[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in (BASE | {"SLACK_SIGNING_SECRET": "s"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["serve", "--workers", "2"]) == 1
    assert "--workers above 1" in capsys.readouterr().err
    assert calls == []


def test_no_worker_needs_a_shared_store(
    monkeypatch: pytest.MonkeyPatch,
    calls: list[tuple[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in (BASE | {"SLACK_SIGNING_SECRET": "s"}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["serve", "--no-worker"]) == 1
    assert "memory:// is private to one process" in capsys.readouterr().err
    assert calls == []
    assert main(["worker"]) == 1
