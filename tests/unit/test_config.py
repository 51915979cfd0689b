from __future__ import annotations

from datetime import timedelta

import pytest

from bot.config import ConfigError, Settings, load_settings

ALL_VARS = [env for env, _default, _accepted in Settings.describe()]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for name in ALL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_defaults_need_nothing() -> None:
    s = load_settings()
    assert s.redis_url == "memory://"
    assert s.aws_mode == "sandbox"
    assert s.aws_region == "us-east-1"
    assert s.approvers == []
    assert s.remind_before_start == [timedelta(hours=24), timedelta(hours=1)]
    assert s.slack_api_url == "https://slack.com/api/"


def test_public_variable_names() -> None:
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_API_URL",
        "REDIS_URL",
        "GPU_BOT_AWS",
        "AWS_REGION",
        "GPU_BOT_APPROVERS",
        "GPU_BOT_APPROVER_GROUP",
        "GPU_BOT_APPROVAL_CHANNEL",
        "GPU_BOT_SECOND_APPROVAL_USD",
        "GPU_BOT_MAX_REQUEST_USD",
        "GPU_BOT_REMIND_BEFORE_START",
        "GPU_BOT_REMIND_BEFORE_EXPIRY",
    ):
        assert name in ALL_VARS


def test_values_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_BOT_APPROVERS", "U111, W222 ,")
    monkeypatch.setenv("GPU_BOT_AWS", "live")
    monkeypatch.setenv("GPU_BOT_REMIND_BEFORE_EXPIRY", "2h,48h")
    monkeypatch.setenv("GPU_BOT_SECOND_APPROVAL_USD", "5000")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9999/api")
    s = load_settings()
    assert s.approvers == ["U111", "W222"]
    assert s.aws_mode == "live"
    assert s.remind_before_expiry == [timedelta(hours=48), timedelta(hours=2)]
    assert s.second_approval_usd == 5000
    assert s.slack_api_url == "http://127.0.0.1:9999/api/"


def test_dotenv_file_is_read(tmp_path: object) -> None:
    with open(".env", "w") as f:
        f.write("GPU_BOT_APPROVAL_CHANNEL=C0123\n")
    assert load_settings().approval_channel == "C0123"


def test_every_bad_variable_is_listed_once_with_what_it_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = {
        "GPU_BOT_AWS": "prod",
        "AWS_REGION": "moon-1",
        "GPU_BOT_APPROVERS": "U123,alice",
        "GPU_BOT_APPROVER_GROUP": "admins",
        "GPU_BOT_APPROVAL_CHANNEL": "#gpu",
        "GPU_BOT_MAX_REQUEST_USD": "-1",
        "GPU_BOT_REMIND_BEFORE_START": "1h,soon",
        "REDIS_URL": "postgres://x",
        "SLACK_APP_TOKEN": "xoxb-not-an-app-token",
        "SLACK_BOT_TOKEN": "secret-value-here",
    }
    for name, value in bad.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == "Bad configuration:"
    for name in bad:
        assert sum(line.strip().startswith(name) for line in lines) == 1, name
    assert "accepted: sandbox" in text
    assert "accepted: comma-separated Slack user ids" in text
    assert "secret-value-here" not in text  # secrets are never echoed


def test_limits_must_be_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_BOT_SECOND_APPROVAL_USD", "10000")
    monkeypatch.setenv("GPU_BOT_MAX_REQUEST_USD", "5000")
    with pytest.raises(ConfigError, match="SECOND_APPROVAL_USD is above"):
        load_settings()


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "infinity"])
@pytest.mark.parametrize("name", ["GPU_BOT_SECOND_APPROVAL_USD", "GPU_BOT_MAX_REQUEST_USD"])
def test_a_spending_limit_that_is_not_a_finite_number_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    # NaN compares false with everything: taken as a limit it would switch the rule off.
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert name in str(info.value)
    assert "finite" in str(info.value)


def test_memory_without_its_extra_is_one_clear_start_up_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "fakeredis" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"REDIS_URL.*gpu-bot\[memory\]"):
        load_settings(REDIS_URL="memory://")
    assert load_settings(REDIS_URL="redis://127.0.0.1:6379/0").redis_url.startswith("redis://")
