"""The environment `gpu-bot serve` runs with in the tests that start it as a process."""

from __future__ import annotations

import os

APPROVER = "U0APPROVER"
APPROVAL_CHANNEL = "C0APPROVALS"


def serve_env(api_url: str, **settings: str) -> dict[str, str]:
    """This process's environment, without an app token (HTTP mode unless `settings` give
    one), with what serve needs to start and the fake Web API's URL."""
    env = {k: v for k, v in os.environ.items() if k != "SLACK_APP_TOKEN"}
    return env | {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_API_URL": api_url,
        "GPU_BOT_APPROVERS": APPROVER,
        "GPU_BOT_APPROVAL_CHANNEL": APPROVAL_CHANNEL,
        **settings,
    }
