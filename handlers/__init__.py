"""Slack listeners: parse the payload, call one service, render the result."""

from __future__ import annotations

from slack_bolt import App

from bot.services.container import Services
from handlers import (
    actions,
    aftercare,
    commands,
    deploys,
    home,
    middleware,
    purchases,
    views,
    watches,
)


def register(app: App, services: Services) -> None:
    middleware.register(app, services)
    commands.register(app, services)
    actions.register(app, services)
    aftercare.register(app, services)
    purchases.register(app, services)
    deploys.register(app, services)
    views.register(app, services)
    home.register(app, services)
    watches.register(app, services)
