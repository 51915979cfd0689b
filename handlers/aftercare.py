"""Buttons on reminders and cleanup prompts: Clean up now, Keep for a day, Not mine.
Each acks at once; the answer is a compare-and-set, so repeated clicks are harmless."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.blocks.ids import ActionId
from bot.blocks.text import esc
from bot.domain.cleanup import Answer
from bot.services.container import Services
from handlers.replies import sorry_where_clicked, tell

CLEANUP_ANSWERS = {
    ActionId.CLEANUP_NOW: Answer.CLEAN_UP,
    ActionId.CLEANUP_KEEP: Answer.KEEP,
    ActionId.CLEANUP_NOT_MINE: Answer.NOT_MINE,
}


def register(app: App, services: Services) -> None:
    for action, choice in CLEANUP_ANSWERS.items():
        app.action(action.value)(_cleanup_listener(services, choice))


def _cleanup_listener(services: Services, choice: Answer) -> Any:
    def listener(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        ack()
        services.background.submit(
            answer_cleanup,
            services,
            body,
            respond,
            client,
            choice,
            on_error=sorry_where_clicked(body, client, respond),
        )

    return listener


def answer_cleanup(
    s: Services, body: dict[str, Any], respond: Respond, client: WebClient, choice: Answer
) -> None:
    user, request_id = body["user"]["id"], str(body["actions"][0]["value"])
    is_approver = s.approvals.is_approver(user)
    said = s.reminders.answer_cleanup(request_id, user, choice, is_approver)
    tell(body, client, respond, esc(said))
