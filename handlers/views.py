"""Modal submissions: the reserve form, submit for approval, reject with a reason.
Field errors come back inline (`response_action: errors`) and change nothing."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.blocks.ids import CallbackId, FormBlock
from bot.blocks.modals import deadline_note
from bot.blocks.quote import request_title
from bot.blocks.text import esc
from bot.domain.grammar import parse_form
from bot.services.container import Services
from bot.services.requests import RequestError
from handlers.actions import publish_home, refusal_text
from handlers.replies import SORRY, metadata_of, view_values


def register(app: App, services: Services) -> None:
    @app.view(CallbackId.RESERVE_FORM.value)
    def reserve(ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        handle_reserve_form(services, ack, body, view, client)

    @app.view(CallbackId.SUBMIT.value)
    def submit(ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        handle_submit(services, ack, body, view, client)

    @app.view(CallbackId.REJECT.value)
    def reject(ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        handle_reject(services, ack, body, view, client)


def handle_reserve_form(
    s: Services, ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient
) -> None:
    values = view_values(view)
    draft, errors = parse_form(values, now=s.clock.now(), catalog=s.catalog)
    if errors:
        ack(response_action="errors", errors=errors)
        return
    request = s.quotes.complete(draft)
    ack()
    user = body["user"]["id"]
    response_url = metadata_of(view).get("response_url") or None

    def run() -> None:
        working = f":hourglass_flowing_sand: Comparing options for {esc(request_title(request))}…"
        s.replies.reply(user, response_url, working)
        s.requests.open(user, request, response_url)

    s.background.submit(run, on_error=lambda _exc: s.replies.reply(user, response_url, SORRY))


def handle_submit(
    s: Services, ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient
) -> None:
    values = view_values(view)
    metadata = metadata_of(view)
    user = body["user"]["id"]
    request_id = metadata.get("request", "")
    pick = values.get(FormBlock.CHOICE.value) or ""
    reason = values.get(FormBlock.REASON.value) or ""
    # Check what can be checked before the ack, so mistakes come back on the form.
    error = _submit_error(s, request_id, user, pick, reason)
    if error is not None:
        ack(response_action="errors", errors={error[0]: error[1]})
        return
    ack()
    response_url = metadata.get("response_url") or None

    def run() -> None:
        try:
            record = s.requests.submit(request_id, user, pick, reason)
        except RequestError as exc:
            # Beside, not over, whatever is shown there (a double submit's success).
            s.replies.reply(user, response_url, f":warning: {esc(str(exc))}", replace=False)
            return
        approvals = "two approvers" if record.required_approvals > 1 else "an approver"
        s.replies.reply(
            user,
            response_url,
            f":outbox_tray: Submitted {record.id} ({esc(request_title(record.request))}) "
            f"for approval by {approvals}. {deadline_note(record)} `/gpu status {record.id}` "
            "shows where it is.",
        )

    s.background.submit(run, on_error=lambda _exc: s.replies.reply(user, response_url, SORRY))


def _submit_error(
    s: Services, request_id: str, user: str, pick: str, reason: str
) -> tuple[str, str] | None:
    """(block id, message) of the first problem with a submission, or None."""
    record = s.requests.get(request_id) if request_id else None
    if record is None:
        return FormBlock.CHOICE.value, "This request no longer exists."
    try:
        s.requests.check_submission(record, user, pick, reason)
    except RequestError as exc:
        return exc.field or FormBlock.CHOICE.value, str(exc)
    return None


def handle_reject(
    s: Services, ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient
) -> None:
    reason = (view_values(view).get(FormBlock.REJECT_REASON.value) or "").strip()
    if not reason:
        ack(
            response_action="errors",
            errors={FormBlock.REJECT_REASON.value: "A rejection needs a reason."},
        )
        return
    ack()
    user = body["user"]["id"]
    metadata = metadata_of(view)

    def run() -> None:
        decision = s.approvals.reject(metadata.get("request", ""), user, reason)
        if decision is not None and not decision.outcome.changed:
            text = refusal_text(decision.outcome, decision.record)
            client.chat_postMessage(channel=user, text=text)
        if metadata.get("from_home") == "true":
            publish_home(s, client, user)

    s.background.submit(run, on_error=lambda _exc: s.replies.reply(user, None, SORRY))
