"""Buttons on reminders, extension cards and cleanup prompts: Extend, Approve / Reject an
extension, Clean up now, Keep for a day, Not mine. Each acks at once; the answer is a
compare-and-set, so repeated clicks are harmless."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.ids import ActionId, CallbackId
from bot.blocks.modals import extension_approve_form, extension_reject_form
from bot.blocks.text import esc, usd, when
from bot.blocks.values import ExtendAsk, ExtensionRef, RequestRef
from bot.domain.cleanup import CleanupChoice
from bot.domain.extension import ExtensionOffer
from bot.services.container import Services
from bot.services.extensions import ExtensionError
from handlers.conversation import Conversation, after_ack
from handlers.home import publish_home
from handlers.views import checked_reason

CLEANUP_ANSWERS = {
    ActionId.CLEANUP_NOW: CleanupChoice.CLEAN_UP,
    ActionId.CLEANUP_KEEP: CleanupChoice.KEEP,
    ActionId.CLEANUP_NOT_MINE: CleanupChoice.NOT_MINE,
}


def register(app: App, services: Services) -> None:
    for action, choice in CLEANUP_ANSWERS.items():
        app.action(action.value)(_cleanup_listener(services, choice))

    @app.action(ActionId.RELEASE.value)
    def release(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, release_reservation, services)

    @app.action(ActionId.EXTEND.value)
    def extend(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, ask_extension, services)

    @app.action(ActionId.EXTENSION_APPROVE.value)
    def approve_extension(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_extension_approve_form, services, client)

    @app.view(CallbackId.EXTENSION_APPROVE.value)
    def extension_approved(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, decide_extension, services, True, "", client)

    @app.action(ActionId.EXTENSION_REJECT.value)
    def reject_extension(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_extension_reject_form, services, client)

    @app.view(CallbackId.EXTENSION_REJECT.value)
    def extension_rejected(ack: Ack, context: BoltContext, client: WebClient) -> None:
        reason = checked_reason(ack, context)
        if reason is not None:
            after_ack(ack, context, decide_extension, services, False, reason, client)


def ask_extension(talk: Conversation, services: Services) -> None:
    ask = talk.subject(ExtendAsk)
    if ask is None:
        return
    request_id = ask.request_id
    try:
        asked = services.extensions.ask(request_id, talk.actor, ask.hours)
    except ExtensionError as exc:
        talk.refuse(str(exc))
        return
    offer = asked.extension.offer
    talk.say(
        f"Asked the approvers to extend {esc(request_id)} by {offer.hours // 24} d, "
        f"to {when(offer.end)}, for {usd(offer.fee_usd)}. You will hear when they decide."
    )


def open_extension_approve_form(talk: Conversation, services: Services, client: WebClient) -> None:
    """Approve: refused at once for whoever may not; the amount put to the others."""
    _open_extension_form(talk, services, client, extension_approve_form)


def open_extension_reject_form(talk: Conversation, services: Services, client: WebClient) -> None:
    _open_extension_form(talk, services, client, extension_reject_form)


def _open_extension_form(
    talk: Conversation,
    services: Services,
    client: WebClient,
    form: Callable[[str, ExtensionOffer, dict[str, str]], dict[str, Any]],
) -> None:
    incoming = talk.interaction
    ref = talk.subject(ExtensionRef)
    if ref is None:
        return
    ext, refused = services.extensions.decision_refusal(ref.request_id, ref.number, talk.actor)
    if ext is None:
        talk.refuse(esc(refused or "Nothing to decide."))
        return
    # The outcome goes by DM: the card the button is on is the approvers'.
    metadata = incoming.modal_metadata(incoming.subject, keep_response_url=False)
    view = form(ref.request_id, ext.offer, metadata)
    client.views_open(trigger_id=incoming.trigger_id, view=view)


def decide_extension(
    talk: Conversation,
    services: Services,
    approve: bool,
    reason: str = "",
    client: WebClient | None = None,
) -> None:
    incoming = talk.interaction
    ref = talk.subject(ExtensionRef)
    if ref is None:
        return
    said = services.extensions.decide(
        ref.request_id, ref.number, talk.actor, approve, reason=reason
    )
    talk.say(esc(said))
    if incoming.from_home and client is not None:
        publish_home(services, client, talk.actor)  # the decided extension leaves the list


def _cleanup_listener(
    services: Services, choice: CleanupChoice
) -> Callable[[Ack, BoltContext], None]:
    def listener(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, answer_cleanup, services, choice)

    return listener


def answer_cleanup(talk: Conversation, services: Services, choice: CleanupChoice) -> None:
    ref = talk.subject(RequestRef)
    if ref is None:
        return
    said = services.reminders.answer_cleanup(ref.request_id, talk.actor, choice)
    talk.say(esc(said))


def release_reservation(talk: Conversation, services: Services) -> None:
    """Release it, on an idle alert: the same people and cleanup rules as Clean up now."""
    ref = talk.subject(RequestRef)
    if ref is None:
        return
    talk.say(esc(services.usage.release(ref.request_id, talk.actor)))
