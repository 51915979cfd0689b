"""App Home: published when a user opens it, and again after a decision made there."""

from __future__ import annotations

from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from bot.blocks.home import MAX_PENDING_CARDS, home_view
from bot.blocks.watches import home_watch_blocks
from bot.services.actor import Actor
from bot.services.container import Services
from handlers.context import INTERACTION
from handlers.conversation import conversation


def register(app: App, services: Services) -> None:
    @app.event("app_home_opened")
    def home_opened(event: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        if event.get("tab", "home") != "home" or context.get(INTERACTION) is None:
            return  # another tab, or nobody to show it to (the front refuses such a body)
        talk = conversation(context)
        # Nobody asked for anything: a failure is logged, not told.
        talk.later(publish_home, services, client, talk.actor, tell_failure=False)


def publish_home(services: Services, client: WebClient, actor: Actor) -> None:
    user = actor.user
    waiting = services.approvals.waiting_for(actor, 0, MAX_PENDING_CARDS)
    mine = services.queries.mine(user)
    view = home_view(
        mine,
        waiting,
        services.clock.now(),
        live=services.reminders.live_for(user),
        mine_total=services.queries.count_mine(user),
        endpoints=services.deploys.standing_of(mine),
    )
    live = services.watches.live_of(user)
    if live:
        view["blocks"] = [*view["blocks"], *home_watch_blocks(live)][:100]
    client.views_publish(user_id=user, view=view)
