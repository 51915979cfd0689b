"""Slack listeners: parse the payload, call one service, render the result."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.app import Services


def register(app: App, services: Services) -> None:
    from handlers import actions, commands, home, middleware, views

    middleware.register(app)
    commands.register(app, services)
    actions.register(app, services)
    views.register(app, services)
    home.register(app, services)
