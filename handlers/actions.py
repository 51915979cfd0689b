"""Buttons: Submit for approval, Cancel, Approve, Reject. Each acks at once; the state
change runs after the ack and is a compare-and-set, so repeated clicks are harmless."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.ids import ActionId
from bot.blocks.modals import approve_form, reject_form, submit_form
from bot.blocks.quote import request_title
from bot.blocks.refusals import refusal_text
from bot.blocks.text import esc
from bot.blocks.values import RequestRef
from bot.domain.decisions import Outcome
from bot.domain.duplicates import asked_already
from bot.services.container import Services
from bot.services.submissions import RequestError
from handlers.context import Surface
from handlers.conversation import Conversation, after_ack
from handlers.home import publish_home


def register(app: App, services: Services) -> None:
    @app.action(ActionId.SUBMIT_OPEN.value)
    def submit_open(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_submit_form, services, client)

    @app.action(ActionId.CANCEL.value)
    def cancel(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, cancel_from_button, services)

    @app.action(ActionId.APPROVE.value)
    def approve(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_approve_form, services, client)

    @app.action(ActionId.REJECT_OPEN.value)
    def reject_open(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_reject_form, services, client)


def open_submit_form(talk: Conversation, services: Services, client: WebClient) -> None:
    incoming, ref = talk.interaction, talk.subject(RequestRef)
    if ref is None:
        return
    request_id = ref.request_id
    record = services.queries.get(request_id)
    try:
        quote = services.submissions.submittable(record, incoming.user, request_id)
    except RequestError as exc:
        talk.refuse(str(exc))
        return
    assert record is not None  # submittable says so
    metadata = incoming.modal_metadata(record.id)
    already = asked_already(record, services.queries.mine(incoming.user, 50))
    view = submit_form(record, quote, metadata, services.submissions.limits, already)
    client.views_open(trigger_id=incoming.trigger_id, view=view)


def cancel_from_button(talk: Conversation, services: Services) -> None:
    ref = talk.subject(RequestRef)
    if ref is not None:
        cancel_request(talk, services, ref.request_id)


def cancel_request(talk: Conversation, services: Services, request_id: str) -> None:
    """Cancel, from its button or `/gpu cancel`."""
    try:
        record = services.requests.cancel(request_id, talk.interaction.user)
    except RequestError as exc:
        talk.refuse(str(exc))
        return
    talk.show(f":wastebasket: Cancelled {record.id} ({esc(request_title(record.request))}).")


def check_the_card(talk: Conversation, services: Services) -> None:
    """A click on a copy of the card the bot does not know (posted twice after a lost
    answer): that copy loses its buttons."""
    incoming = talk.interaction
    # An ephemeral message (`/gpu list waiting`, a reply) is no copy of the card.
    copy = incoming.surface is Surface.MESSAGE and not incoming.ephemeral
    if copy and incoming.channel and incoming.message_ts:
        services.notifications.clicked_card(
            incoming.subject or "", incoming.channel, incoming.message_ts
        )


def open_approve_form(talk: Conversation, services: Services, client: WebClient) -> None:
    """Approve: refuse at once anyone who may not (the requester, a non-approver, a
    second click by the same approver); put the amount to the others. Its answers go
    back where the click came from."""
    _open_decision_form(talk, services, client, approving=True)


def approve_confirmed(talk: Conversation, services: Services, client: WebClient) -> None:
    """The confirmed Approve: decided again from a fresh read (compare-and-set)."""
    incoming, ref = talk.interaction, talk.subject(RequestRef)
    if ref is None:
        return
    request_id = ref.request_id
    decision = services.approvals.approve(request_id, talk.actor)
    if decision is None:
        talk.say(f"There is no request {esc(request_id)}.")
    elif decision.outcome is Outcome.PARTIAL:
        why = ""
        if decision.budget is not None and decision.budget.over:
            why = f" ({esc(decision.budget.line())}: over its budget)"
        talk.say(f"Approval recorded for {decision.record.id}; it needs one more approver{why}.")
    elif not decision.outcome.changed:
        talk.say(refusal_text(decision.outcome, decision.record, decision.budget))
    if incoming.from_home:
        publish_home(services, client, talk.actor)


def open_reject_form(talk: Conversation, services: Services, client: WebClient) -> None:
    """Reject: refused at once for whoever may not decide; a reason form for the others.
    What comes of the rejection goes by DM: the card it came from is the approvers'."""
    _open_decision_form(talk, services, client, approving=False)


def _open_decision_form(
    talk: Conversation, services: Services, client: WebClient, approving: bool
) -> None:
    incoming, ref = talk.interaction, talk.subject(RequestRef)
    if ref is None:
        return
    request_id = ref.request_id
    record, refused = services.approvals.refusal(request_id, talk.actor, approving=approving)
    check_the_card(talk, services)
    if record is None:
        talk.say(f"There is no request {esc(request_id)}.")
        return
    if refused is not None:
        talk.say(refusal_text(refused, record))
        return
    if approving:
        # The team's month as it stands now, not as it stood at submission.
        budget = services.spending.check(record, record.most_usd or 0.0)
        shown = record.model_copy(update={"budget": budget}) if budget else record
        view = approve_form(shown, incoming.modal_metadata(record.id))
    else:
        view = reject_form(record, incoming.modal_metadata(record.id, keep_response_url=False))
    client.views_open(trigger_id=incoming.trigger_id, view=view)
