"""`market …` in the shell: move the sandbox market on purpose, so a watch's story can be
shown with the clock and no luck.

    market release 8x p5.48xlarge us-east-1 from 2026-12-16 3d
        such a block (or plan) is offered: nobody else has it
    market take p5.48xlarge us-east-1 [from 2026-12-14 10d]
        others bought every one overlapping the window (default: the next 8 weeks)
    market churn 25% [seed=7]
        every 6 hours of the clock, a quarter of the offerings are bought by others
"""

from __future__ import annotations

from datetime import datetime, timedelta

from aws_sandbox import SandboxMarket
from bot.domain.grammar import RequestSyntaxError, parse_request
from bot.domain.request import RequestDraft

USAGE = (
    "`market release 8x p5.48xlarge us-east-1 from 2026-12-16 3d`, "
    "`market take p5.48xlarge us-east-1 [from DATE DURATION]` or `market churn 25% [seed=7]`"
)
TAKE_AHEAD = timedelta(weeks=8, days=1)


def market_command(market: SandboxMarket | None, words: str, now: datetime) -> str:
    action, _, rest = words.strip().partition(" ")
    if market is None:
        return "The market moves only in the sandbox (GPU_BOT_AWS=sandbox)."
    if action == "churn":
        return _churn(market, rest)
    if action not in ("release", "take"):
        return f"Usage: {USAGE}."
    try:
        draft = parse_request(rest, now=now)
    except RequestSyntaxError as exc:
        return f"{exc}. Usage: {USAGE}."
    if draft.instance_type is None or draft.region is None or "," in draft.region:
        return f"Name the instance type and one region. Usage: {USAGE}."
    start, end = _window(draft, now, action == "take")
    if start is None or end is None:
        return f"A release needs its start and duration. Usage: {USAGE}."
    moves = market.conditions.moves
    shown = (
        f"{draft.instance_type} in {draft.region} from {start:%Y-%m-%d %H:%M}Z "
        f"to {end:%Y-%m-%d %H:%M}Z"
    )
    if action == "release":
        moves.release(draft.instance_type, draft.region, start, end)
        return f"Market: {shown} released; nobody else holds it now."
    moves.take(draft.instance_type, draft.region, start, end)
    return f"Market: {shown} taken by others; nothing of it is offered now."


def _window(
    draft: RequestDraft, now: datetime, taking: bool
) -> tuple[datetime | None, datetime | None]:
    """A release covers the blocks starting on its day (at 11:30 UTC) for its duration."""
    if draft.start is None or draft.duration_hours is None:
        if taking:
            return now, now + TAKE_AHEAD
        return None, None
    return draft.start, draft.start + timedelta(hours=draft.duration_hours, days=1)


def _churn(market: SandboxMarket, rest: str) -> str:
    share_text, seed = "", 0
    for word in rest.split():
        if word.startswith("seed=") and word[5:].isdigit():
            seed = int(word[5:])
        else:
            share_text = word
    try:
        share = float(share_text.rstrip("%")) / 100
        market.conditions.moves.churn(share, seed)
    except ValueError:
        return f"Usage: {USAGE}."
    return (
        f"Market: every 6 hours, {share:.0%} of the offerings are bought by others (seed {seed})."
    )
