"""App Home: published when a user opens it."""

from __future__ import annotations

from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from bot.services.container import Services
from handlers.actions import publish_home


def register(app: App, services: Services) -> None:
    @app.event("app_home_opened")
    def home_opened(event: dict[str, Any], client: WebClient) -> None:
        if event.get("tab", "home") != "home":
            return
        services.background.submit(publish_home, services, client, event["user"])
