"""Buttons on a purchase or an extension of unknown outcome: Check again, Mark failed
(approvers only). Neither ever buys: checking looks in AWS, marking failed records a
person's decision."""

from __future__ import annotations

from collections.abc import Callable

from slack_bolt import Ack, App, BoltContext

from bot.blocks.ids import ActionId
from bot.blocks.values import ExtensionRef, RequestRef
from bot.domain.extension import Extension, ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.actor import NotAllowed
from bot.services.container import Services
from handlers.conversation import Conversation, V, after_ack


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
    def check(ref: RequestRef) -> str:
        record = services.purchases.check_again(ref.request_id, talk.actor)
        if record is not None and record.state is State.PURCHASE_UNKNOWN:
            return f"Still nothing in AWS for {record.id}: check the account, or mark it failed."
        return _request_now(ref, record)

    _approvers_only(talk, RequestRef, check)


def mark_failed_click(talk: Conversation, services: Services) -> None:
    def mark(ref: RequestRef) -> str:
        return _request_now(ref, services.purchases.mark_failed(ref.request_id, talk.actor))

    _approvers_only(talk, RequestRef, mark)


def check_extension_click(talk: Conversation, services: Services) -> None:
    def check(ref: ExtensionRef) -> str:
        ext = services.extensions.check_again(ref.request_id, ref.number, talk.actor)
        if ext is not None and ext.status is ExtensionStatus.UNKNOWN:
            return (
                f"AWS still shows {ref.request_id} ending before the extension: check the "
                "account, or mark it failed."
            )
        return _extension_now(ref, ext)

    _approvers_only(talk, ExtensionRef, check)


def mark_extension_failed_click(talk: Conversation, services: Services) -> None:
    def mark(ref: ExtensionRef) -> str:
        ext = services.extensions.mark_failed(ref.request_id, ref.number, talk.actor)
        return _extension_now(ref, ext)

    _approvers_only(talk, ExtensionRef, mark)


def _approvers_only(talk: Conversation, kind: type[V], act: Callable[[V], str]) -> None:
    """The button's value read as `kind`, the service's answer said; its refusal of
    anyone but an approver said as a refusal."""
    ref = talk.subject(kind)
    if ref is None:
        return
    try:
        said = act(ref)
    except NotAllowed as exc:
        talk.refuse(str(exc))
        return
    talk.say(said)


def _request_now(ref: RequestRef, record: CapacityRecord | None) -> str:
    if record is None:
        return f"There is no request {ref.request_id}."
    return f"{record.id} is {record.state.label}."


def _extension_now(ref: ExtensionRef, ext: Extension | None) -> str:
    if ext is None or ext.number != ref.number:
        return f"That extension of {ref.request_id} was replaced by a newer one."
    return f"Extension {ext.number} of {ref.request_id} is {ext.status.value.replace('_', ' ')}."
