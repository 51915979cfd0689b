"""Global middleware: a short id per Slack request, on the context and in the logs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from slack_bolt import App, BoltContext, BoltRequest, BoltResponse


def register(app: App) -> None:
    @app.middleware
    def request_id(
        context: BoltContext, request: BoltRequest, logger: Any, next: Callable[[], BoltResponse]
    ) -> BoltResponse:
        context["request_id"] = uuid.uuid4().hex[:8]
        retry = request.headers.get("x-slack-retry-num")
        if retry:
            logger.info("Slack retry %s of a delivery (%s)", retry[0], context["request_id"])
        return next()
