"""Buttons: Submit for approval, Cancel, Approve, Reject. Each acks at once; the state
change runs after the ack and is a compare-and-set, so repeated clicks are harmless."""

from __future__ import annotations

import json
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.blocks.home import home_view
from bot.blocks.ids import ActionId
from bot.blocks.modals import reject_form, submit_form
from bot.blocks.quote import request_title
from bot.blocks.text import esc
from bot.domain.approval import Outcome
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.container import Services
from bot.services.requests import RequestError
from handlers.replies import reply_error, sorry, sorry_where_clicked, tell

REFUSALS = {
    Outcome.NOT_APPROVER: "Only approvers can decide GPU requests.",
    Outcome.OWN_REQUEST: "You cannot approve or reject your own request.",
    Outcome.ALREADY_APPROVED_BY_YOU: "You have approved this already; it needs another approver.",
    Outcome.REASON_REQUIRED: "A rejection needs a reason.",
    Outcome.TOO_LATE: "This request's time for a decision has passed; it is timing out.",
}


def register(app: App, services: Services) -> None:
    @app.action(ActionId.SUBMIT_OPEN.value)
    def submit_open(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        ack()
        services.background.submit(
            open_submit_form, services, body, respond, client, on_error=sorry(respond)
        )

    @app.action(ActionId.CANCEL.value)
    def cancel(ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        ack()
        services.background.submit(
            cancel_from_button, services, body, respond, on_error=sorry(respond)
        )

    @app.action(ActionId.APPROVE.value)
    def approve(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        ack()
        services.background.submit(
            approve_click,
            services,
            body,
            respond,
            client,
            on_error=sorry_where_clicked(body, client, respond),
        )

    @app.action(ActionId.REJECT_OPEN.value)
    def reject_open(ack: Ack, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        ack()
        services.background.submit(
            open_reject_form,
            services,
            body,
            respond,
            client,
            on_error=sorry_where_clicked(body, client, respond),
        )


def _clicked(body: dict[str, Any]) -> tuple[str, str]:
    """(user id, request id) of a button click."""
    return body["user"]["id"], str(body["actions"][0]["value"])


def open_submit_form(
    s: Services, body: dict[str, Any], respond: Respond, client: WebClient
) -> None:
    user, request_id = _clicked(body)
    record = s.requests.get(request_id)
    if record is None:
        reply_error(respond, f"There is no request {request_id}.")
        return
    if record.quote is None or record.requester != user:
        reply_error(respond, f"Request {record.id} is not yours to submit.")
        return
    if record.state is not State.QUOTED:
        reply_error(respond, f"Request {record.id} is {record.state.label} already.")
        return
    metadata = {"request": record.id, "response_url": body.get("response_url", "")}
    client.views_open(
        trigger_id=body["trigger_id"], view=submit_form(record, record.quote, metadata)
    )


def cancel_from_button(s: Services, body: dict[str, Any], respond: Respond) -> None:
    user, request_id = _clicked(body)
    try:
        record = s.requests.cancel(request_id, user)
    except RequestError as exc:
        reply_error(respond, str(exc))
        return
    respond(
        text=f":wastebasket: Cancelled {record.id} ({esc(request_title(record.request))}).",
        replace_original=True,
    )


def approve_click(s: Services, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
    user, request_id = _clicked(body)
    decision = s.approvals.approve(request_id, user)
    if decision is None:
        tell(body, client, respond, f"There is no request {esc(request_id)}.")
    elif decision.outcome is Outcome.PARTIAL:
        record_id = decision.record.id
        tell(
            body, client, respond, f"Approval recorded for {record_id}; it needs one more approver."
        )
    elif not decision.outcome.changed:
        tell(body, client, respond, refusal_text(decision.outcome, decision.record))
    refresh_home(s, client, body)


def open_reject_form(
    s: Services, body: dict[str, Any], respond: Respond, client: WebClient
) -> None:
    user, request_id = _clicked(body)
    record, refused = s.approvals.refusal(request_id, user)
    if record is None:
        tell(body, client, respond, f"There is no request {esc(request_id)}.")
        return
    if refused is not None:
        tell(body, client, respond, refusal_text(refused, record))
        return
    metadata = {"request": record.id, "from_home": json.dumps(not body.get("response_url"))}
    client.views_open(trigger_id=body["trigger_id"], view=reject_form(record, metadata))


def refusal_text(outcome: Outcome, record: CapacityRecord) -> str:
    """Why a click on Approve or Reject changed nothing, for the person who clicked."""
    if outcome is Outcome.NOT_PENDING:
        return f"Request {record.id} is {record.state.label} already."
    return f":warning: {REFUSALS[outcome]}"


def refresh_home(s: Services, client: WebClient, body: dict[str, Any]) -> None:
    """Re-publish the clicker's App Home when the click came from there."""
    if (
        body.get("container", {}).get("type") != "view"
        or body.get("view", {}).get("type") != "home"
    ):
        return
    publish_home(s, client, body["user"]["id"])


def publish_home(s: Services, client: WebClient, user: str) -> None:
    is_approver = s.approvals.is_approver(user)
    waiting = s.approvals.waiting_for(user) if is_approver else None
    view = home_view(s.requests.mine(user), waiting, is_approver, s.clock.now())
    client.views_publish(user_id=user, view=view)
