"""The capacity outlook in words: `/gpu outlook` and `gpu-bot outlook`, the one line a
quote carries when no block or plan fits or its start is closer than usual, and what a
watch's first DM says of its chances. Every figure says what it rests on, and that it is
what this account's searches saw, not AWS's capacity. Pure."""

from __future__ import annotations

from typing import Any

from bot.blocks.elements import context, section
from bot.blocks.text import esc
from bot.domain.outlook import HONEST, NOT_ENOUGH, THIN_DAYS, Horizon, Outlook

Block = dict[str, Any]
HONEST_LINE = HONEST[0].upper() + HONEST[1:]


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _weeks(n: int) -> str:
    return f"{n} week" if n == 1 else f"{n} weeks"


def horizon_text(h: Horizon) -> str:
    if h.thin:
        return f"{_weeks(h.weeks)}: {NOT_ENOUGH} ({_days(h.searched_days)} searched)"
    return f"{_weeks(h.weeks)}: seen on {h.seen_days} of {_days(h.searched_days)} searched"


def lead_text(o: Outlook) -> str:
    typical = o.typical_lead()
    if typical is None:
        return f"Typical lead time: {NOT_ENOUGH} ({_days(len(o.earliest_leads))} seen)"
    low, median, high = typical
    return (
        f"Typical lead time: usually {low} to {high} days ahead (median {median}; the "
        f"earliest start seen on each of {_days(len(o.earliest_leads))})"
    )


def price_text(o: Outlook) -> str:
    figures = o.price_range()
    if figures is None:
        return "Price per instance-hour: nothing seen"
    lowest, median = figures
    text = (
        f"Price per instance-hour: lowest ${lowest:,.2f}, median ${median:,.2f} "
        f"({o.offerings_seen} offerings over {_days(len(o.prices))})"
    )
    changes = [p for p in o.prices if p.changed]
    if changes:
        before = {p.day: prev.lowest_usd for prev, p in zip(o.prices, o.prices[1:], strict=False)}
        shown = [
            f"{p.day.isoformat()} (${before[p.day]:,.2f} → ${p.lowest_usd:,.2f})"
            for p in changes[-3:]
        ]
        text += "; the lowest changed on " + ", ".join(shown)
    return text


def regions_text(o: Outlook) -> str:
    if not o.regions:
        return "Regions: none seen yet"
    shown = ", ".join(f"{esc(name)} ({_days(n)})" for name, n in o.regions[:5])
    return f"Regions seen most: {shown}"


def outlook_lines(title: str, o: Outlook) -> list[str]:
    """The outlook as lines of text, headline first."""
    head = f"Capacity outlook: {esc(title)}, last {_days(o.window_days)}"
    searches = "1 search" if o.searches == 1 else f"{o.searches} searches"
    counts = (
        f"{searches} on {_days(o.days_searched)}, {o.searches_found} found "
        f"something, {o.offerings_seen} offerings seen"
    )
    if o.thin:
        return [
            head,
            f"Not enough seen yet: {counts} (an outlook needs searches on "
            f"{THIN_DAYS} days; quotes, watches and the outlook scan add them)",
            f"({HONEST})",
        ]
    return [
        head,
        f"Seen on {o.days_seen} of {_days(o.days_searched)} searched ({counts})",
        "A start within " + " · ".join(horizon_text(h) for h in o.horizons),
        lead_text(o),
        price_text(o),
        regions_text(o),
        f"({HONEST})",
    ]


def outlook_blocks(title: str, o: Outlook) -> list[Block]:
    lines = outlook_lines(title, o)
    return [
        section(f"*{lines[0]}*"),
        section("\n".join(f"• {line}" for line in lines[1:-1])),
        context(f"_{HONEST_LINE}._"),
    ]


def outlook_text(title: str, o: Outlook) -> str:
    return "\n".join(outlook_lines(title, o))


def hint_line(subject: str, o: Outlook) -> str | None:
    """The one line a quote carries ("p5 3-day blocks in us-east-1 were seen on 12 of the
    last 30 days, usually 9 to 14 days ahead"); None when too little was seen to say."""
    if o.thin:
        return None
    line = (
        f"{esc(subject)} were seen on {o.days_seen} of the last {_days(o.days_searched)} searched"
    )
    typical = o.typical_lead()
    if typical is not None:
        line += f", usually {typical[0]} to {typical[2]} days ahead"
    return f"{line} ({HONEST}); watch for one?"


def chance_line(o: Outlook, weeks_ahead: float) -> str:
    """How likely a watch's match is, from the same figures."""
    if o.thin:
        return f"How likely a match is: {NOT_ENOUGH} ({_days(o.days_searched)} searched)."
    horizon = next((h for h in o.horizons if weeks_ahead <= h.weeks), o.horizons[-1])
    if horizon.thin:
        return (
            f"How likely a match is: {NOT_ENOUGH} for a start within {_weeks(horizon.weeks)} "
            f"({_days(horizon.searched_days)} searched)."
        )
    share = horizon.seen_days / horizon.searched_days
    return (
        f"How likely a match is: such an offering starting within {_weeks(horizon.weeks)} was "
        f"seen on {horizon.seen_days} of {_days(horizon.searched_days)} searched "
        f"({share:.0%}; {HONEST})."
    )
