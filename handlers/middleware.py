"""Global middleware: a short id per Slack request (on the context and in the logs), and
the payload read once into an `Interaction`, the `Actor` the services decide with (who,
and whether they may approve: asked once, when first needed) and the `Conversation` that
answers them."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.middleware import Middleware

from bot.services.actor import Actor
from bot.services.container import Services
from handlers.context import INTERACTION, parse
from handlers.conversation import CONVERSATION, Conversation

log = logging.getLogger(__name__)


def register(app: App, services: Services) -> None:
    app.use(_Interaction(services))


class _Interaction(Middleware):
    """A `Middleware` subclass, not a function: Bolt calls it directly, without working
    out a function's keyword arguments on every request."""

    def __init__(self, services: Services) -> None:
        self._services = services

    def process(
        self, *, req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
    ) -> BoltResponse | None:
        context = req.context
        context["request_id"] = f"{random.getrandbits(32):08x}"  # no system call in the ack path
        retry = req.headers.get("x-slack-retry-num")
        if retry:
            log.info("Slack retry %s of a delivery (%s)", retry[0], context["request_id"])
        signature = req.headers.get("x-slack-signature")
        parsed = parse(req.body, signature[0] if signature else None)
        if parsed is not None:
            context[INTERACTION] = parsed
            services = self._services
            actor = Actor(parsed.user, services.approvals.is_approver)
            context[CONVERSATION] = Conversation(
                parsed, actor, services.replies, services.after_ack
            )
        return next()
