"""Global middleware: a short id per Slack request (on the context and in the logs), and
the payload read once into an `Interaction` with its `Conversation` for the listeners."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from slack_bolt import App, BoltContext, BoltRequest, BoltResponse

from bot.services.container import Services
from handlers.context import INTERACTION, parse
from handlers.conversation import CONVERSATION, Conversation


def register(app: App, services: Services) -> None:
    @app.middleware
    def request_id(
        context: BoltContext, request: BoltRequest, logger: Any, next: Callable[[], BoltResponse]
    ) -> BoltResponse:
        context["request_id"] = uuid.uuid4().hex[:8]
        retry = request.headers.get("x-slack-retry-num")
        if retry:
            logger.info("Slack retry %s of a delivery (%s)", retry[0], context["request_id"])
        return next()

    @app.middleware
    def interaction(
        context: BoltContext, body: dict[str, Any], next: Callable[[], BoltResponse]
    ) -> BoltResponse:
        parsed = parse(body)
        if parsed is not None:
            context[INTERACTION] = parsed
            context[CONVERSATION] = Conversation(parsed, services.replies, services.after_ack)
        return next()
