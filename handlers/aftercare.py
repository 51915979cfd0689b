"""Buttons on reminders and cleanup prompts: Clean up now, Keep for a day, Not mine.
Each acks at once; the answer is a compare-and-set, so repeated clicks are harmless."""

from __future__ import annotations

from collections.abc import Callable

from slack_bolt import Ack, App, BoltContext

from bot.blocks.ids import ActionId
from bot.blocks.text import esc
from bot.domain.cleanup import Answer
from bot.services.container import Services
from handlers.conversation import Conversation, after_ack

CLEANUP_ANSWERS = {
    ActionId.CLEANUP_NOW: Answer.CLEAN_UP,
    ActionId.CLEANUP_KEEP: Answer.KEEP,
    ActionId.CLEANUP_NOT_MINE: Answer.NOT_MINE,
}


def register(app: App, services: Services) -> None:
    for action, choice in CLEANUP_ANSWERS.items():
        app.action(action.value)(_cleanup_listener(services, choice))


def _cleanup_listener(services: Services, choice: Answer) -> Callable[[Ack, BoltContext], None]:
    def listener(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, answer_cleanup, services, choice)

    return listener


def answer_cleanup(talk: Conversation, services: Services, choice: Answer) -> None:
    about = talk.interaction
    is_approver = services.approvals.is_approver(about.user)
    said = services.reminders.answer_cleanup(
        about.request_id or "", about.user, choice, is_approver
    )
    talk.say(esc(said))
