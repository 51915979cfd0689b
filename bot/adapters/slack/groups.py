"""Slack user group membership (usergroups.users.list; needs usergroups:read)."""

from __future__ import annotations

from slack_sdk import WebClient


class SlackGroupDirectory:
    def __init__(self, client: WebClient) -> None:
        self.client = client

    def members(self, group_id: str) -> list[str]:
        response = self.client.usergroups_users_list(usergroup=group_id)
        users: list[str] = response.get("users", [])
        return [str(u) for u in users]
