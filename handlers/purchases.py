"""Buttons on a purchase of unknown outcome: Check again, Mark failed (approvers only).
Neither ever buys: checking looks in AWS, marking failed records a person's decision."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext

from bot.blocks.ids import ActionId
from bot.blocks.values import RequestRef
from bot.domain.lifecycle import State
from bot.services.actor import NotAllowed
from bot.services.container import Services
from handlers.conversation import Conversation, after_ack


def register(app: App, services: Services) -> None:
    @app.action(ActionId.PURCHASE_CHECK.value)
    def check_again(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, check_click, services)

    @app.action(ActionId.PURCHASE_MARK_FAILED.value)
    def mark_failed(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, mark_failed_click, services)


def check_click(talk: Conversation, services: Services) -> None:
    ref = talk.subject(RequestRef)
    if ref is None:
        return
    try:
        record = services.purchases.check_again(ref.request_id, talk.actor)
    except NotAllowed as exc:
        talk.refuse(str(exc))
        return
    if record is None:
        talk.say(f"There is no request {ref.request_id}.")
    elif record.state is State.PURCHASE_UNKNOWN:
        talk.say(f"Still nothing in AWS for {record.id}: check the account, or mark it failed.")
    else:
        talk.say(f"{record.id} is {record.state.label}.")


def mark_failed_click(talk: Conversation, services: Services) -> None:
    ref = talk.subject(RequestRef)
    if ref is None:
        return
    try:
        record = services.purchases.mark_failed(ref.request_id, talk.actor)
    except NotAllowed as exc:
        talk.refuse(str(exc))
        return
    if record is None:
        talk.say(f"There is no request {ref.request_id}.")
    else:
        talk.say(f"{record.id} is {record.state.label}.")
