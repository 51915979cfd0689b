from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "data" / "slack-app-manifest.schema.json"


def manifest() -> dict[str, object]:
    data = yaml.safe_load((ROOT / "manifest.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_manifest_matches_the_slack_schema() -> None:
    jsonschema.validate(manifest(), json.loads(SCHEMA.read_text()))


def test_manifest_has_what_the_features_need() -> None:
    m = manifest()
    features = m["features"]
    settings = m["settings"]
    assert isinstance(features, dict) and isinstance(settings, dict)
    assert [c["command"] for c in features["slash_commands"]] == ["/gpu"]
    assert features["app_home"]["home_tab_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    assert "app_home_opened" in settings["event_subscriptions"]["bot_events"]
    scopes = set(m["oauth_config"]["scopes"]["bot"])  # type: ignore[index]
    assert {"commands", "chat:write", "users:read", "usergroups:read", "im:write"} <= scopes
    # conversations.history finds a reminder by its delivery key after an uncertain post
    assert {"im:history", "channels:history", "groups:history"} <= scopes
