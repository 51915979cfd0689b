"""`gpu-bot config`: every setting shown, secrets never."""

from __future__ import annotations

import pytest

from bot.cli import main
from bot.config import Settings


def test_every_setting_is_listed_and_secrets_are_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = {
        "SLACK_BOT_TOKEN": "xoxb-1111-very-secret",
        "SLACK_SIGNING_SECRET": "signing-very-secret",
        "SLACK_APP_TOKEN": "xapp-1-very-secret",
    }
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("REDIS_URL", "redis://default:hunter2-very-secret@redis.internal:6379/0")
    monkeypatch.setenv("GPU_BOT_APPROVERS", "U0ALICE,U0BOB")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "very-secret" not in out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert set(lines) == {env for env, _d, _a in Settings.describe()}
    for key in secrets:
        assert lines[key].split()[1] == "(set)"
    assert "redis://default:****@redis.internal:6379/0" in lines["REDIS_URL"]
    assert "U0ALICE,U0BOB" in lines["GPU_BOT_APPROVERS"]


def test_a_bad_configuration_exits_with_what_is_wrong(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPU_BOT_APPROVAL_TIMEOUT", "soon")
    with pytest.raises(SystemExit, match="1"):
        main(["config"])
    err = capsys.readouterr().err
    assert "GPU_BOT_APPROVAL_TIMEOUT" in err and "soon" in err
