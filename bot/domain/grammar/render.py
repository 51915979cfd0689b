"""A draft -> its canonical request text (which parses back to the same draft)."""

from __future__ import annotations

from datetime import UTC, datetime, time

from bot.domain.grammar.vocabulary import (
    REGION_RE,
)
from bot.domain.request import (
    RequestDraft,
)


def render_request(draft: RequestDraft) -> str:
    """Canonical text for a draft; `parse_request` of it gives the same draft back."""
    parts: list[str] = []
    if draft.count is not None:
        parts.append(f"{draft.count}x")
    if draft.instance_type is not None:
        parts.append(draft.instance_type)
    if draft.duration_hours is not None:
        parts.append(render_duration(draft.duration_hours))
    if draft.start is not None:
        parts.append(f"from {render_start(draft.start)}")
    if draft.region is not None:
        single = REGION_RE.fullmatch(draft.region)
        parts.append(draft.region if single else f"region={draft.region}")
    if draft.environment is not None:
        parts.append(draft.environment.value)
    if draft.workload is not None:
        parts.append(draft.workload.value)
    if draft.interruptible:
        parts.append("interruptible")
    if draft.utilization_pct is not None:
        parts.append(f"util={draft.utilization_pct}%")
    if draft.account is not None:
        parts.append(f"account={draft.account}")
    if draft.reason:
        escaped = draft.reason.replace("\\", "\\\\").replace('"', '\\"')
        parts.append(f'reason="{escaped}"')
    return " ".join(parts)


def render_duration(hours: int) -> str:
    if hours % 168 == 0:
        return f"{hours // 168}w"
    if hours % 24 == 0:
        return f"{hours // 24}d"
    return f"{hours}h"


def render_start(when: datetime) -> str:
    when = when.astimezone(UTC)
    if when.time() == time(0, 0):
        return when.date().isoformat()
    if when.second:
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return when.strftime("%Y-%m-%dT%H:%MZ")


def duration_words(hours: int) -> str:
    """A duration in words: "1 day", "3 days", "2 weeks", "5 hours"."""
    short = render_duration(hours)
    unit = {"w": "week", "d": "day", "h": "hour"}[short[-1]]
    n = int(short[:-1])
    return f"{n} {unit}{'s' if n != 1 else ''}"
