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
    assert {"commands", "chat:write", "usergroups:read", "im:write"} <= scopes
    # conversations.history finds a reminder by its delivery key after an uncertain post
    assert {"im:history", "channels:history", "groups:history"} <= scopes


# The bot-token scopes each Web API method the bot calls needs, as each method's page lists
# them (https://docs.slack.dev/reference/methods/<method>; read 2026-12). Where a page lists
# one scope per kind of conversation, all apply: the approval channel may be a public or a
# private channel or a group DM, and decisions go to IMs.
HISTORY = {"channels:history", "groups:history", "im:history", "mpim:history"}
METHOD_SCOPES: dict[str, set[str]] = {
    "auth_test": set(),  # .../methods/auth.test: no scope
    "views_open": set(),  # .../methods/views.open: no scope
    "views_publish": set(),  # .../methods/views.publish: no scope
    "chat_postMessage": {"chat:write"},  # .../methods/chat.postMessage
    "chat_update": {"chat:write"},  # .../methods/chat.update
    # .../methods/conversations.open: im:write for a DM (the only kind the bot opens)
    "conversations_open": {"im:write"},
    "conversations_history": HISTORY,  # .../methods/conversations.history
    "conversations_replies": HISTORY,  # .../methods/conversations.replies
    # .../methods/files.getUploadURLExternal and files.completeUploadExternal: the chart.
    "files_upload_v2": {"files:write"},
    "usergroups_users_list": {"usergroups:read"},  # .../methods/usergroups.users.list
}
# Scopes a manifest feature needs beside the methods: /gpu
# (https://docs.slack.dev/reference/scopes/commands).
FEATURE_SCOPES = {"commands"}


def calls_in_the_code() -> set[str]:
    return {
        match
        for package in ("bot", "handlers")
        for path in (ROOT / package).rglob("*.py")
        for match in re.findall(
            r"\.((?:chat|conversations|files|usergroups|users|views|reactions|auth|apps)_\w+)\b",
            path.read_text(),
        )
    }


def test_the_manifest_asks_for_exactly_the_scopes_the_code_needs() -> None:
    called = calls_in_the_code()
    assert "files_upload_v2" in called and "conversations_replies" in called
    unknown = called - METHOD_SCOPES.keys()
    assert not unknown, f"add the scopes these calls need to METHOD_SCOPES: {sorted(unknown)}"
    needed = FEATURE_SCOPES.union(*(METHOD_SCOPES[method] for method in called))
    requested = set(manifest()["oauth_config"]["scopes"]["bot"])  # type: ignore[index]
    assert sorted(needed - requested) == [], "needed and not requested"
    assert sorted(requested - needed) == [], "requested and used by no call"


HTTP_MANIFEST = ROOT / "deploy" / "slack-manifest-http.yml"


def test_the_http_manifest_is_the_socket_mode_one_with_request_urls() -> None:
    """manifest.yml is Socket Mode; deploy/kubernetes/ runs HTTP mode (no app token, a
    Service on the serve pods), and deploy/slack-manifest-http.yml is its manifest."""
    http = yaml.safe_load(HTTP_MANIFEST.read_text())
    jsonschema.validate(http, json.loads(SCHEMA.read_text()))
    assert http["settings"]["socket_mode_enabled"] is False
    (command,) = http["features"]["slash_commands"]
    urls = [
        command.pop("url"),
        http["settings"]["interactivity"].pop("request_url"),
        http["settings"]["event_subscriptions"].pop("request_url"),
    ]
    assert all(url.startswith("https://") and url.endswith("/slack/events") for url in urls)
    http["settings"]["socket_mode_enabled"] = True
    assert http == manifest()  # the same app otherwise: commands, scopes, events
    secret = (ROOT / "deploy" / "kubernetes" / "secret.example.yaml").read_text()
    assert "SLACK_APP_TOKEN" not in yaml.safe_load(secret)["stringData"]
