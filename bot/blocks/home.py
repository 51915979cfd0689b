"""App Home: the user's requests, and for approvers what waits for them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.blocks.deploy import endpoint_lines
from bot.blocks.elements import context, section
from bot.blocks.help import example_request
from bot.blocks.requests import list_blocks
from bot.blocks.text import when
from bot.blocks.usage import utilisation_line
from bot.blocks.waiting import waiting_groups, waiting_item_blocks
from bot.domain.deployment.record import Deployment
from bot.domain.records import CapacityRecord
from bot.domain.reminders import LiveReservation, human_duration

View = dict[str, Any]
MAX_PENDING_CARDS = 10  # each card is about 6 blocks; a Home view holds 100


def home_view(
    mine: list[CapacityRecord],
    waiting: tuple[list[CapacityRecord], int] | None,
    now: datetime,
    live: Sequence[LiveReservation] = (),
    mine_total: int | None = None,
    endpoints: Sequence[Deployment] = (),
) -> View:
    """`mine` is the newest page of the user's requests, of `mine_total`; `endpoints` the
    deployments on their reservations that may still hold resources; `waiting` (None: not
    an approver) the first page of what waits for this approver and how many do, each
    shown with its buttons (requests, extensions, purchases of unknown outcome, leftovers
    handed to the approvers)."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "gpu-bot"}},
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"`/gpu reserve {example_request(now)}` to ask for GPUs · "
                    "`/gpu help` for everything else",
                }
            ],
        },
        *live_blocks(live),
        *endpoint_blocks(endpoints),
        *list_blocks(
            "Your requests", mine, "No requests yet.", total=mine_total, more="/gpu list 2"
        ),
    ]
    if waiting is not None:
        pending, total = waiting
        shown = pending[:MAX_PENDING_CARDS]
        blocks.append({"type": "divider"})
        if not shown:
            blocks.append(section(f"*Waiting for approval ({total})*"))
            blocks.append(context("Nothing waits for you."))
        # Decisions, then leftovers handed to the approvers, each under its heading.
        for title, records in waiting_groups(shown, complete=total <= len(shown)) if shown else []:
            blocks.append(section(f"*{title}*"))
            for record in records:
                blocks += waiting_item_blocks(record)
                blocks.append({"type": "divider"})
        if total > MAX_PENDING_CARDS:
            more = (
                f"{total - MAX_PENDING_CARDS} more: `/gpu list waiting` lists them all, "
                "a page at a time."
            )
            blocks.append(context(more))
    return {"type": "home", "blocks": blocks[:100]}


def endpoint_blocks(endpoints: Sequence[Deployment]) -> list[dict[str, Any]]:
    if not endpoints:
        return []
    title = section("*Your endpoints*")
    lines = endpoint_lines(endpoints[:20])
    if len(endpoints) > 20:
        lines.append(f"… and {len(endpoints) - 20} more")
    body = section("\n".join(lines))
    return [title, body, {"type": "divider"}]


_WINDOW_KIND = {"on-demand": "On-Demand", "spot": "Spot"}


def live_blocks(live: Sequence[LiveReservation]) -> list[dict[str, Any]]:
    """Each live reservation with its time left and the next reminder."""
    if not live:
        return []
    lines = []
    for item in live[:20]:
        w = item.window
        left = human_duration(item.time_left)
        timing = f"ends in {left}" if item.started else f"starts in {left}"
        upcoming = (
            f"next reminder {when(item.next.due)} ({item.next.kind.label})"
            if item.next
            else "no more reminders before the end"
        )
        kind = "" if item.record.reservation else f" ({_WINDOW_KIND.get(w.kind, w.kind)})"
        used = f" · {utilisation_line(item.record.usage)}" if item.started else ""
        lines.append(
            f"*{item.record.id}* {item.instances}x {item.instance_type}{kind} "
            f"{when(w.start)} → {when(w.end)} · *{timing}* · {upcoming}{used}"
        )
    title = section("*Your reservations*")
    body = section("\n".join(lines))
    return [title, body, {"type": "divider"}]
