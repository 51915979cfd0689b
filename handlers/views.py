"""Modal submissions: the reserve form, submit for approval, reject with a reason.
Field errors come back inline (`response_action: errors`) and change nothing."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.ids import CallbackId, FormBlock
from bot.blocks.modals import deadline_note
from bot.blocks.quote import request_title
from bot.blocks.refusals import REFUSALS, refusal_text
from bot.blocks.text import esc
from bot.blocks.values import RequestRef
from bot.domain.approval import rejection_reason
from bot.domain.decisions import Outcome
from bot.domain.grammar import RequestSyntaxError, parse_form
from bot.domain.request import MAX_REASON_CHARS, CapacityRequest
from bot.services.container import Services
from bot.services.submissions import RequestError
from handlers.actions import approve_confirmed
from handlers.context import Interaction, interaction
from handlers.conversation import Conversation, after_ack
from handlers.home import publish_home


def register(app: App, services: Services) -> None:
    @app.view(CallbackId.RESERVE_FORM.value)
    def reserve(ack: Ack, context: BoltContext) -> None:
        handle_reserve_form(services, ack, context)

    @app.view(CallbackId.SUBMIT.value)
    def submit(ack: Ack, context: BoltContext) -> None:
        handle_submit(services, ack, context)

    @app.view(CallbackId.REJECT.value)
    def reject(ack: Ack, context: BoltContext, client: WebClient) -> None:
        handle_reject(services, ack, context, client)

    @app.view(CallbackId.APPROVE.value)
    def approve(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, approve_confirmed, services, client)


def handle_reserve_form(services: Services, ack: Ack, context: BoltContext) -> None:
    incoming = interaction(context)
    now = services.clock.now()
    draft, errors = parse_form(dict(incoming.values), now=now, catalog=services.catalog)
    if errors:
        ack(response_action="errors", errors=errors)
        return
    try:
        request = services.quotes.complete(draft)
    except RequestSyntaxError as exc:
        # An account that is not configured, a region AWS does not have: on its field.
        account = (exc.token or "").startswith("account=")
        field = FormBlock.ACCOUNT if account else FormBlock.REGION
        ack(response_action="errors", errors={field.value: str(exc)[:1500]})
        return
    after_ack(ack, context, open_request, services, request)


def open_request(talk: Conversation, services: Services, request: CapacityRequest) -> None:
    talk.show(f":hourglass_flowing_sand: Comparing options for {esc(request_title(request))}…")
    incoming = talk.interaction
    services.requests.open(
        incoming.user,
        request,
        incoming.response_url,
        on_error=talk.sorry,
        channel=incoming.channel,
    )


def handle_submit(services: Services, ack: Ack, context: BoltContext) -> None:
    incoming = interaction(context)
    pick = incoming.value(FormBlock.CHOICE.value) or ""
    reason = incoming.value(FormBlock.REASON.value) or ""
    # Check what can be checked before the ack, so mistakes come back on the form.
    error = _submit_error(services, incoming, pick, reason)
    if error is not None:
        ack(response_action="errors", errors={error[0]: error[1]})
        return
    after_ack(ack, context, submit_request, services, pick, reason)


def submit_request(talk: Conversation, services: Services, pick: str, reason: str) -> None:
    ref = talk.subject(RequestRef)
    if ref is None:
        return
    try:
        record = services.requests.submit(ref.request_id, talk.actor.user, pick, reason)
    except RequestError as exc:
        talk.refuse(str(exc))  # beside, not over, whatever is shown (a double submit's success)
        return
    approvals = "two approvers" if record.required_approvals > 1 else "an approver"
    if record.budget is not None and record.budget.over:
        approvals += f" (it takes {esc(record.budget.team)} over its monthly budget)"
    talk.show(
        f":outbox_tray: Submitted {record.id} ({esc(request_title(record.request))}) "
        f"for approval by {approvals}. {deadline_note(record)} `/gpu status {record.id}` "
        "shows where it is."
    )


def _submit_error(
    services: Services, incoming: Interaction, pick: str, reason: str
) -> tuple[str, str] | None:
    """(block id, message) of the first problem with a submission, or None."""
    record = services.queries.get(incoming.subject) if incoming.subject else None
    if record is None:
        return FormBlock.CHOICE.value, "This request no longer exists."
    try:
        services.submissions.check(record, incoming.user, pick, reason)
    except RequestError as exc:
        return exc.field or FormBlock.CHOICE.value, str(exc)
    return None


def handle_reject(services: Services, ack: Ack, context: BoltContext, client: WebClient) -> None:
    reason = checked_reason(ack, context)
    if reason is not None:
        after_ack(ack, context, reject_request, services, client, reason)


def checked_reason(ack: Ack, context: BoltContext) -> str | None:
    """The reason typed in a reject form, cleaned; None after telling the form what is
    wrong with it. Checked here, not only by the modal's max_length: a forged submission
    skips that."""
    reason = rejection_reason(interaction(context).value(FormBlock.REJECT_REASON.value) or "")
    problem = None
    if reason is None:
        problem = REFUSALS[Outcome.REASON_REQUIRED]
    elif len(reason) > MAX_REASON_CHARS:
        problem = f"Keep the reason under {MAX_REASON_CHARS} characters (it has {len(reason)})."
    if problem is not None:
        ack(response_action="errors", errors={FormBlock.REJECT_REASON.value: problem})
        return None
    return reason


def reject_request(talk: Conversation, services: Services, client: WebClient, reason: str) -> None:
    incoming, ref = talk.interaction, talk.subject(RequestRef)
    if ref is None:
        return
    decision = services.approvals.reject(ref.request_id, talk.actor, reason)
    if decision is not None and not decision.outcome.changed:
        talk.say(refusal_text(decision.outcome, decision.record))
    if incoming.from_home:
        publish_home(services, client, talk.actor)
