"""Buttons on a purchase or an extension of unknown outcome: Check again, Mark failed
(approvers only). Neither ever buys: checking looks in AWS, marking failed records a
person's decision."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext

from bot.blocks.ids import ActionId
from bot.blocks.values import ExtensionRef, RequestRef
from bot.domain.extension import Extension, ExtensionStatus
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

    @app.action(ActionId.EXTENSION_CHECK.value)
    def check_extension(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, check_extension_click, services)

    @app.action(ActionId.EXTENSION_MARK_FAILED.value)
    def extension_failed(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, mark_extension_failed_click, services)


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


def check_extension_click(talk: Conversation, services: Services) -> None:
    ref = talk.subject(ExtensionRef)
    if ref is None:
        return
    try:
        ext = services.extensions.check_again(ref.request_id, ref.number, talk.actor)
    except NotAllowed as exc:
        talk.refuse(str(exc))
        return
    if ext is not None and ext.status is ExtensionStatus.UNKNOWN:
        talk.say(
            f"AWS still shows {ref.request_id} ending before the extension: check the "
            "account, or mark it failed."
        )
    else:
        talk.say(_extension_now(ref, ext))


def mark_extension_failed_click(talk: Conversation, services: Services) -> None:
    ref = talk.subject(ExtensionRef)
    if ref is None:
        return
    try:
        ext = services.extensions.mark_failed(ref.request_id, ref.number, talk.actor)
    except NotAllowed as exc:
        talk.refuse(str(exc))
        return
    talk.say(_extension_now(ref, ext))


def _extension_now(ref: ExtensionRef, ext: Extension | None) -> str:
    if ext is None or ext.number != ref.number:
        return f"That extension of {ref.request_id} was replaced by a newer one."
    return f"Extension {ext.number} of {ref.request_id} is {ext.status.value.replace('_', ' ')}."
