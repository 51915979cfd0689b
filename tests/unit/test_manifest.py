from __future__ import annotations

import json
import re
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


# The bot scopes each Web API method the bot calls needs (the history scopes: for each kind
# of conversation it reads; every one of them is asked for).
METHOD_SCOPES: dict[str, set[str]] = {
    "auth_test": set(),
    "views_open": set(),
    "views_publish": set(),
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "conversations_open": {"im:write"},
    "conversations_history": {"channels:history", "groups:history", "im:history"},
    "conversations_replies": {"channels:history", "groups:history"},
    # files.getUploadURLExternal and files.completeUploadExternal: the cost chart.
    "files_upload_v2": {"files:write"},
    "usergroups_users_list": {"usergroups:read"},
}


def test_every_web_api_call_the_bot_makes_has_its_scope() -> None:
    called = {
        match
        for package in ("bot", "handlers")
        for path in (ROOT / package).rglob("*.py")
        for match in re.findall(
            r"\.((?:chat|conversations|files|usergroups|users|views|reactions|auth|apps)_\w+)\b",
            path.read_text(),
        )
    }
    assert "files_upload_v2" in called and "conversations_replies" in called
    unknown = called - METHOD_SCOPES.keys()
    assert not unknown, f"add the scopes these calls need to METHOD_SCOPES: {sorted(unknown)}"
    scopes = set(manifest()["oauth_config"]["scopes"]["bot"])  # type: ignore[index]
    for method in called:
        assert METHOD_SCOPES[method] <= scopes, f"{method} needs {METHOD_SCOPES[method]}"
