"""`/gpu` and its subcommands. Parsing and refusals happen before the ack (they are pure
and fast); anything that touches AWS, Redis or the Web API runs after it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.deploy import deployments_block
from bot.blocks.help import example_request, help_blocks, usage
from bot.blocks.mig import mig_check_blocks, mig_plan_blocks
from bot.blocks.modals import reserve_form
from bot.blocks.quote import request_title
from bot.blocks.requests import PAGE, list_blocks, status_blocks, status_summary_blocks
from bot.blocks.text import esc, unescape_slack
from bot.blocks.waiting import WAITING_PAGE, waiting_blocks
from bot.domain.catalog import UnknownInstanceType
from bot.domain.grammar import RequestSyntaxError
from bot.domain.mig import ModelError, UnknownProfile, check_layout, parse_models, plan_layout
from bot.domain.request import CapacityRequest, IncompleteRequest, RequestDraft
from bot.domain.visibility import sees_in_full
from bot.services.container import Services
from handlers.actions import cancel_request
from handlers.conversation import Conversation, after_ack, conversation
from handlers.deploys import clean_up, is_deployment_id, open_deploy_form, show_deployment
from handlers.outlook import outlook_command
from handlers.spend import show_spend, spend_args
from handlers.watches import WATCH_COMMANDS, is_watch_id, show_watch, watch_command

LIST_USAGE = "`/gpu list [PAGE]` (your requests), `/gpu list waiting [PAGE]` (approvers)"
SUBCOMMANDS = (
    "reserve",
    "quote",
    "status",
    "list",
    "spend",
    "cancel",
    "deploy",
    "cleanup",
    "mig",
    "watch",
    "watches",
    "outlook",
    "unwatch",
    "help",
)
MIG_USAGE = (
    "`/gpu mig check INSTANCE PROFILE[xN]... [ami=VERSION]`, for example "
    "`/gpu mig check p4d.24xlarge 4g.20gb 2g.10gb 1g.5gb` or `/gpu mig check p4d.24xlarge "
    "1g.5gb x7`; "
    "`/gpu mig plan INSTANCE NAME=MEMORY[xCOPIES]...`, for example "
    "`/gpu mig plan p4d.24xlarge llama=18gbx8 embed=4gbx8`"
)


# Subcommands answered wholly in their ack: no store read, nothing changed, nothing sent
# anywhere else (the HTTP front skips their replay check: see bot.server.wsgi_app).
ANSWERED_IN_ACK = ("", "help", "mig")
# ...and these, unless they open the form: what they start (a request, a quote) is handed
# to the intake with the request's signature, which drops a replay there.
HANDED_IN = ("reserve", "quote")


def answered_in_ack(services: Services) -> Callable[[Mapping[str, str]], bool]:
    """Whether a slash command (its form fields) is answered wholly in its ack."""

    def check(command: Mapping[str, str]) -> bool:
        if command.get("command") != "/gpu":
            return False
        sub, rest = _subcommand(command.get("text") or "")
        if sub in ANSWERED_IN_ACK:
            return True
        return sub in HANDED_IN and not (sub == "reserve" and _opens_form(services, rest))

    return check


def _opens_form(services: Services, rest: str) -> bool:
    """`/gpu reserve` with pieces missing opens the form (after the ack)."""
    try:
        request = services.quotes.complete(services.quotes.parse(rest))
    except RequestSyntaxError:
        return False  # answered in the ack with the mistake
    except Exception:
        return True  # the form, or a failure: the listener's usual path either way
    _parsed.keep(rest, request)
    return False


class _ParsedOnThisThread(threading.local):
    """The request the front's check (`answered_in_ack`) parsed, for the listener that
    runs next on the same thread (the serving thread, for a command answered in its
    ack): parsed once per command. Taken once, and only within a second."""

    text: str | None = None
    request: CapacityRequest | None = None
    at = 0.0

    def keep(self, text: str, request: CapacityRequest) -> None:
        self.text, self.request, self.at = text, request, time.monotonic()

    def take(self, text: str) -> CapacityRequest | None:
        fresh = self.text == text and time.monotonic() - self.at < 1.0
        request = self.request if fresh else None
        self.text, self.request = None, None
        return request


_parsed = _ParsedOnThisThread()


def _subcommand(raw: str) -> tuple[str, str]:
    """(subcommand in lower case, the rest) of a /gpu command's text as Slack sends it."""
    sub, _, rest = unescape_slack(raw).strip().partition(" ")
    return sub.lower(), rest


def register(app: App, services: Services) -> None:
    @app.command("/gpu")
    def gpu(ack: Ack, command: dict[str, Any], context: BoltContext, client: WebClient) -> None:
        handle_gpu(services, ack, command, context, client)


def handle_gpu(
    services: Services,
    ack: Ack,
    command: dict[str, Any],
    context: BoltContext,
    client: WebClient,
) -> None:
    sub, rest = _subcommand(command.get("text") or "")
    now = services.clock.now()
    if sub in ("", "help"):
        ack(text="gpu-bot help", blocks=help_blocks(now))
    elif sub in ("reserve", "quote"):
        _reserve_or_quote(services, ack, context, client, sub, rest)
    elif sub == "status":
        after_ack(ack, context, _status, services, rest.strip())
    elif sub in WATCH_COMMANDS:
        watch_command(services, ack, context, sub, rest)
    elif sub == "outlook":
        outlook_command(services, ack, context, rest)
    elif sub == "list":
        which = list_args(rest)
        if which is None:
            ack(text=f"Usage: {LIST_USAGE}")
            return
        after_ack(ack, context, _list, services, *which)
    elif sub == "spend":
        asked = spend_args(rest)
        if isinstance(asked, str):
            ack(text=asked)
            return
        after_ack(ack, context, show_spend, services, *asked)
    elif sub == "cleanup":
        if not rest.strip():
            ack(
                text="What should be cleaned up? `/gpu cleanup D3` (a deployment) or `/gpu "
                "cleanup R12` (every deployment of a request)."
            )
            return
        after_ack(ack, context, clean_up, services, rest.strip())
    elif sub == "deploy":
        after_ack(ack, context, open_deploy_form, services, client, rest.strip() or None)
    elif sub == "mig":
        ack(**_mig(services, rest))
    elif sub == "cancel":
        if not rest.strip():
            ack(text="Which request? `/gpu cancel ID`, for example `/gpu cancel R12`.")
            return
        after_ack(ack, context, cancel_request, services, rest.strip())
    else:
        accepted = ", ".join(SUBCOMMANDS)
        ack(text=f'Unknown subcommand "{esc(sub)}". Accepted: {accepted}.\n{usage(now)}')


def _reserve_or_quote(
    services: Services,
    ack: Ack,
    context: BoltContext,
    client: WebClient,
    sub: str,
    rest: str,
) -> None:
    draft = RequestDraft()
    try:
        request = _parsed.take(rest)
        if request is None:
            draft = services.quotes.parse(rest)
            request = services.quotes.complete(draft)
    except RequestSyntaxError as exc:
        example = example_request(services.clock.now())
        ack(
            text=f":warning: {esc(str(exc))}\nExample: `/gpu {sub} {example}`. "
            "`/gpu help` lists every piece."
        )
        return
    except IncompleteRequest as exc:
        if sub == "quote":
            example = example_request(services.clock.now())
            ack(
                text=f":warning: Missing {', '.join(exc.missing)}. Example: `/gpu quote {example}`."
            )
            return
        after_ack(ack, context, _open_form, services, client, draft, exc.missing)
        return
    # Handed in before the ack (no I/O: the intake stores it a moment later).
    talk = conversation(context)
    incoming = talk.interaction
    start = services.requests.quote_only if sub == "quote" else services.requests.open
    start(
        incoming.user,
        request,
        incoming.response_url,
        delivery=incoming.delivery,
        on_error=talk.sorry,
        channel=incoming.channel,
    )
    ack(text=f":hourglass_flowing_sand: Comparing options for {esc(request_title(request))}…")


def _open_form(
    talk: Conversation,
    services: Services,
    client: WebClient,
    draft: RequestDraft,
    missing: list[str],
) -> None:
    note = None
    if draft != RequestDraft():
        note = "Filled in from your command; still needed: " + ", ".join(missing) + "."
    incoming = talk.interaction
    metadata = incoming.modal_metadata()
    region = services.settings.aws_region
    accounts = services.quotes.accounts
    types = services.catalog.instance_types
    view = reserve_form(draft, types, region, metadata, note, accounts=accounts)
    client.views_open(trigger_id=incoming.trigger_id, view=view)


def _mig(services: Services, rest: str) -> dict[str, Any]:
    """`/gpu mig check ...` and `/gpu mig plan ...`: pure and fast, so answered in the ack."""
    words = rest.split()
    action = words[0].lower() if words else ""
    if action == "plan" and len(words) >= 3:
        return _mig_plan(services, words[1], words[2:])
    if action != "check" or len(words) < 3:
        return {"text": f"Usage: {MIG_USAGE}"}
    ami = next((w.split("=", 1)[1] for w in words[2:] if w.lower().startswith("ami=")), None)
    profiles = [w for w in words[2:] if not w.lower().startswith("ami=")]
    if not profiles:
        return {"text": f"Which profiles? Usage: {MIG_USAGE}"}
    try:
        instance = services.catalog.instance(words[1])
        check = check_layout(instance, profiles, ami=ami)
    except (UnknownInstanceType, UnknownProfile) as exc:
        return {"text": f":warning: {esc(str(exc))}. Usage: {MIG_USAGE}"}
    verdict = "valid" if check.valid else "invalid"
    return {"text": f"MIG layout {verdict}", "blocks": mig_check_blocks(check)}


def _mig_plan(services: Services, instance_type: str, models: list[str]) -> dict[str, Any]:
    try:
        instance = services.catalog.instance(instance_type)
        needs = parse_models(models)
        plan = plan_layout(instance, needs, services.catalog, services.settings.aws_region)
    except (UnknownInstanceType, ModelError) as exc:
        return {"text": f":warning: {esc(str(exc))}. Usage: {MIG_USAGE}"}
    verdict = "a MIG layout fits" if plan.fits else "no MIG layout fits"
    return {"text": verdict, "blocks": mig_plan_blocks(plan)}


STATUS_HISTORY_USAGE = "`/gpu status R12 history 2` (the next page of its history)"


def _status(talk: Conversation, services: Services, asked: str) -> None:
    request_id, _, more = asked.partition(" ")
    page = 1
    if more.strip():
        words = more.split()
        if (
            len(words) != 2
            or words[0].lower() != "history"
            or not words[1].isdigit()
            or not 0 < int(words[1]) < 10_000
        ):
            talk.show(
                f"One request at a time, and then only a history page: {STATUS_HISTORY_USAGE}."
            )
            return
        page = int(words[1])
    if is_deployment_id(request_id):
        show_deployment(talk, services, request_id)
        return
    if is_watch_id(request_id):
        show_watch(talk, services, request_id)
        return
    if request_id:
        record = services.queries.get(request_id)
    else:
        latest = services.queries.mine(talk.interaction.user, limit=1)
        record = latest[0] if latest else None
    if record is None:
        what = f"request {esc(request_id)}" if request_id else "any request of yours"
        talk.show(f"I can't find {what}. `/gpu list` shows yours.")
        return
    everyone = services.settings.requests_visible == "all"
    if not sees_in_full(record.requester, talk.actor, everyone):
        talk.show(f"Request {record.id}: {record.state.label}", status_summary_blocks(record))
        return
    blocks = status_blocks(record, services.queries.history(record.id), page)
    deployments = services.deploys.of_request(record.id)
    if deployments:
        blocks.append(deployments_block(deployments))
    talk.show(f"Request {record.id}: {record.state.label}", blocks)


def list_args(rest: str) -> tuple[bool, int] | None:
    """`/gpu list [waiting] [PAGE]`: (only what waits for you, page from 1), or None."""
    words = rest.lower().split()
    waiting = bool(words) and words[0] == "waiting"
    words = words[1:] if waiting else words
    if not words:
        return waiting, 1
    if len(words) == 1 and words[0].isdigit() and 0 < int(words[0]) < 10_000:
        return waiting, int(words[0])
    return None


def _list(talk: Conversation, services: Services, only_waiting: bool, page: int) -> None:
    user = talk.interaction.user
    offset = (page - 1) * PAGE
    blocks = []
    if not only_waiting:
        mine = services.queries.mine(user, PAGE, offset)
        total = services.queries.count_mine(user)
        more = f"/gpu list {page + 1}"
        blocks += list_blocks(
            "Your requests", mine, "No requests yet.", offset=offset, total=total, more=more
        )
    if talk.actor.is_approver and (only_waiting or page == 1):
        # Requests and extensions alike, each with its buttons, a page at a time.
        shown_from = (page - 1) * WAITING_PAGE if only_waiting else 0
        waiting = services.approvals.waiting_for(talk.actor, shown_from, WAITING_PAGE)
        assert waiting is not None
        more = f"/gpu list waiting {page + 1 if only_waiting else 2}"
        shown, total = waiting
        blocks += waiting_blocks(shown, total, offset=shown_from, more=more)
    elif not talk.actor.is_approver and only_waiting:
        talk.show("Only approvers have requests waiting for them.")
        return
    talk.show("Your GPU requests", blocks)
