"""`/gpu spend [YYYY-MM] [TEAM]`: the month's spend per request and per team. Approvers see
every team; others see their own team's."""

from __future__ import annotations

import re

from bot.blocks.spend import spend_blocks, spend_fallback
from bot.blocks.text import esc
from bot.domain.budgets import MONTH_ACCEPTED, month_of, parse_month
from bot.services.container import Services
from bot.services.spending import UnknownTeam
from handlers.conversation import Conversation

SPEND_USAGE = "`/gpu spend [YYYY-MM] [TEAM]`, for example `/gpu spend 2026-12 ml-research`"
_LOOKS_LIKE_MONTH = re.compile(r"[0-9]{2,}[-/][0-9]+")


def spend_args(rest: str) -> tuple[str | None, str | None] | str:
    """(month or None for this one, team or None), or the message saying what is wrong."""
    words = rest.split()
    month: str | None = None
    if words and _LOOKS_LIKE_MONTH.fullmatch(words[0]):
        try:
            month = parse_month(words.pop(0))
        except ValueError as exc:
            return f":warning: {esc(str(exc))}. Usage: {SPEND_USAGE}"
    if len(words) > 1:
        return f":warning: One team at most ({MONTH_ACCEPTED} first). Usage: {SPEND_USAGE}"
    return month, (words[0] if words else None)


def show_spend(talk: Conversation, services: Services, month: str | None, team: str | None) -> None:
    ledger = services.spending
    month = month or month_of(services.clock.now())
    incoming = talk.interaction
    own = ledger.team_of(incoming.user, incoming.channel)
    if not talk.actor.is_approver:
        if team is not None and team != own:
            talk.show(f"Only approvers see other teams' spend; yours is `/gpu spend {month}`.")
            return
        team = own
    try:
        report = ledger.report(month, team, services.deploys.of_request, own_team=team == own)
    except UnknownTeam as exc:
        talk.show(f":warning: {esc(str(exc))} Usage: {SPEND_USAGE}")
        return
    talk.show(spend_fallback(report), spend_blocks(report))
