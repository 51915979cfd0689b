"""`/gpu` and its subcommands. Parsing and refusals happen before the ack (they are pure
and fast); anything that touches AWS, Redis or the Web API runs after it."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.blocks.help import example_request, help_blocks, usage
from bot.blocks.mig import mig_check_blocks
from bot.blocks.modals import reserve_form
from bot.blocks.quote import request_title
from bot.blocks.requests import list_blocks, status_blocks
from bot.blocks.text import esc, unescape_slack
from bot.domain.catalog import UnknownInstanceType
from bot.domain.grammar import RequestSyntaxError
from bot.domain.mig import UnknownProfile, check_layout
from bot.domain.request import IncompleteRequest, RequestDraft
from bot.services.container import Services
from bot.services.requests import RequestError
from handlers.replies import reply_error, sorry

SUBCOMMANDS = ("reserve", "quote", "status", "list", "cancel", "mig", "help")
MIG_USAGE = (
    "`/gpu mig check INSTANCE PROFILE... [ami=VERSION]`, for example "
    "`/gpu mig check p4d.24xlarge 4g.20gb 2g.10gb 1g.5gb`"
)


def register(app: App, services: Services) -> None:
    @app.command("/gpu")
    def gpu(ack: Ack, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
        handle_gpu(services, ack, command, respond, client)


def handle_gpu(
    s: Services, ack: Ack, command: dict[str, Any], respond: Respond, client: WebClient
) -> None:
    text = unescape_slack(command.get("text") or "").strip()
    sub, _, rest = text.partition(" ")
    sub = sub.lower()
    user = command["user_id"]
    if sub in ("", "help"):
        ack(text="gpu-bot help", blocks=help_blocks(s.clock.now()))
    elif sub in ("reserve", "quote"):
        _reserve_or_quote(s, ack, command, respond, client, sub, rest)
    elif sub == "status":
        ack()
        s.background.submit(_status, s, respond, user, rest.strip(), on_error=sorry(respond))
    elif sub == "list":
        ack()
        s.background.submit(_list, s, respond, user, on_error=sorry(respond))
    elif sub == "mig":
        ack(**_mig(s, rest))
    elif sub == "cancel":
        if not rest.strip():
            ack(text="Which request? `/gpu cancel ID`, for example `/gpu cancel R12`.")
            return
        ack()
        s.background.submit(_cancel, s, respond, user, rest.strip(), on_error=sorry(respond))
    else:
        accepted = ", ".join(SUBCOMMANDS)
        ack(text=f'Unknown subcommand "{esc(sub)}". Accepted: {accepted}.\n{usage(s.clock.now())}')


def _reserve_or_quote(
    s: Services,
    ack: Ack,
    command: dict[str, Any],
    respond: Respond,
    client: WebClient,
    sub: str,
    rest: str,
) -> None:
    try:
        draft = s.quotes.parse(rest)
        request = s.quotes.complete(draft)
    except RequestSyntaxError as exc:
        example = example_request(s.clock.now())
        ack(
            text=f":warning: {esc(str(exc))}\nExample: `/gpu {sub} {example}`. "
            "`/gpu help` lists every piece."
        )
        return
    except IncompleteRequest as exc:
        if sub == "quote":
            example = example_request(s.clock.now())
            ack(
                text=f":warning: Missing {', '.join(exc.missing)}. Example: `/gpu quote {example}`."
            )
            return
        ack()
        s.background.submit(
            _open_form, s, client, command, draft, exc.missing, on_error=sorry(respond)
        )
        return
    ack(text=f":hourglass_flowing_sand: Comparing options for {esc(request_title(request))}…")
    start = s.requests.quote_only if sub == "quote" else s.requests.open
    s.background.submit(
        start, command["user_id"], request, command.get("response_url"), on_error=sorry(respond)
    )


def _open_form(
    s: Services,
    client: WebClient,
    command: dict[str, Any],
    draft: RequestDraft,
    missing: list[str],
) -> None:
    note = None
    if draft != RequestDraft():
        note = "Filled in from your command; still needed: " + ", ".join(missing) + "."
    metadata = {
        "response_url": command.get("response_url", ""),
        "channel": command.get("channel_id", ""),
    }
    view = reserve_form(draft, s.catalog.instance_types, s.settings.aws_region, metadata, note)
    client.views_open(trigger_id=command["trigger_id"], view=view)


def _mig(s: Services, rest: str) -> dict[str, Any]:
    """`/gpu mig check ...`: pure and fast, so it is answered in the ack itself."""
    words = rest.split()
    if not words or words[0].lower() != "check" or len(words) < 2:
        return {"text": f"Usage: {MIG_USAGE}"}
    ami = next((w.split("=", 1)[1] for w in words[2:] if w.lower().startswith("ami=")), None)
    profiles = [w for w in words[2:] if not w.lower().startswith("ami=")]
    try:
        instance = s.catalog.instance(words[1])
        check = check_layout(instance, profiles, ami=ami)
    except (UnknownInstanceType, UnknownProfile) as exc:
        return {"text": f":warning: {esc(str(exc))}. Usage: {MIG_USAGE}"}
    verdict = "valid" if check.valid else "invalid"
    return {"text": f"MIG layout {verdict}", "blocks": mig_check_blocks(check)}


def _status(s: Services, respond: Respond, user: str, request_id: str) -> None:
    if request_id:
        record = s.requests.get(request_id)
    else:
        latest = s.requests.mine(user, limit=1)
        record = latest[0] if latest else None
    if record is None:
        what = f"request {esc(request_id)}" if request_id else "any request of yours"
        respond(text=f"I can't find {what}. `/gpu list` shows yours.")
        return
    respond(
        text=f"Request {record.id}: {record.state.label}",
        blocks=status_blocks(record, s.requests.history(record.id)),
    )


def _list(s: Services, respond: Respond, user: str) -> None:
    blocks = list_blocks("Your requests", s.requests.mine(user), "No requests yet.")
    if s.approvals.is_approver(user):
        blocks += list_blocks(
            "Waiting for approval", s.approvals.waiting_for(user), "Nothing waits for you."
        )
    respond(text="Your GPU requests", blocks=blocks)


def _cancel(s: Services, respond: Respond, user: str, request_id: str) -> None:
    try:
        record = s.requests.cancel(request_id, user)
    except RequestError as exc:
        reply_error(respond, str(exc))
        return
    respond(text=f":wastebasket: Cancelled {record.id} ({esc(request_title(record.request))}).")
