"""The `/gpu watch` grammar: the request grammar (bot/domain/grammar/), plus

    flex=7d | flex=36h        how far past the asked start the start may move (0 to 8 weeks)
    max=40/h | max=30000      the most per instance-hour (/h), or in all (USD)
    until=2026-12-10          when to stop watching (default: the latest start that still
                              fits, at most 8 weeks from now)
    auto=submit               submit a match for approval at once (needs reason=)

`parse_watch` returns a `WatchAsk`; it raises only `RequestSyntaxError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from bot.domain.catalog import Catalog
from bot.domain.grammar import (
    RequestSyntaxError,
    parse_request,
    render_duration,
    render_request,
    render_start,
)
from bot.domain.grammar.values import Builder
from bot.domain.request import RequestDraft
from bot.domain.watch import MAX_FLEX, MAX_WATCH, PriceCap, end_of_day

WATCH_FORMS: dict[str, str] = {
    "flex": "flex=7d or flex=36h: how far the start may move (0h to 8w)",
    "max": "max=40/h (USD per instance-hour) or max=30000 (USD in all), more than 0",
    "until": "until=2026-12-10 (today or later, within 8 weeks)",
    "auto": "auto=submit (submits a match for approval at once; needs reason=)",
}
_MAX_RE = re.compile(r"\$?(?P<n>[0-9]{1,9}(?:\.[0-9]{1,4})?)(?P<hourly>/h(?:r|our)?)?")
_FLEX_RE = re.compile(r"-?[0-9]{1,6}\s*[a-z]+")
_DAY_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class WatchAsk:
    """A parsed watch: the request asked for and what the watch adds to it."""

    draft: RequestDraft
    flex_hours: int = 0
    cap: PriceCap | None = None
    until: datetime | None = None
    auto_submit: bool = False


def parse_watch(text: str, *, now: datetime, catalog: Catalog | None = None) -> WatchAsk:
    """Split off the watch's own settings, parse the rest as a request."""
    rest: list[str] = []
    found: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        name = key.lower()
        if sep and name in WATCH_FORMS:
            if name in found:
                raise RequestSyntaxError(
                    f"{name}= is given twice", token=token, accepted=WATCH_FORMS[name]
                )
            found[name] = value.strip().lower()
        else:
            rest.append(token)
    draft = parse_request(" ".join(rest), now=now, catalog=catalog)
    builder = Builder(catalog or _default(), now)
    ask = WatchAsk(
        draft=draft,
        flex_hours=_flex(builder, found["flex"]) if "flex" in found else 0,
        cap=_cap(found["max"]) if "max" in found else None,
        until=_until(builder, found["until"], now) if "until" in found else None,
        auto_submit=_auto(found["auto"]) if "auto" in found else False,
    )
    if ask.auto_submit and not draft.reason:
        raise RequestSyntaxError(
            "auto=submit sends a match to the approvers, and they need a reason",
            token="auto=submit",  # noqa: S106 - a token of the command, not a secret
            accepted='reason="what it is for" beside auto=submit',
        )
    return ask


def _default() -> Catalog:
    from bot.domain.catalog import default_catalog

    return default_catalog()


def _flex(b: Builder, value: str) -> int:
    token = f"flex={value}"
    if value.startswith("-"):
        raise RequestSyntaxError(
            f'"{token}" is negative: the start can only move later',
            token=token,
            accepted=WATCH_FORMS["flex"],
        )
    if value in ("0", "0h", "0d"):
        return 0
    if not _FLEX_RE.fullmatch(value):
        raise RequestSyntaxError(
            f'"{token}" is not a duration', token=token, accepted=WATCH_FORMS["flex"]
        )
    try:
        hours = b.duration(value, token)
    except RequestSyntaxError:
        raise RequestSyntaxError(
            f'"{token}" is not a duration', token=token, accepted=WATCH_FORMS["flex"]
        ) from None
    if timedelta(hours=hours) > MAX_FLEX:
        raise RequestSyntaxError(
            f'"{token}" is more than 8 weeks', token=token, accepted=WATCH_FORMS["flex"]
        )
    return hours


def _cap(value: str) -> PriceCap:
    token = f"max={value}"
    m = _MAX_RE.fullmatch(value)
    if not m:
        raise RequestSyntaxError(
            f'"{token}" is not an amount', token=token, accepted=WATCH_FORMS["max"]
        )
    usd = float(m.group("n"))
    if usd <= 0:
        raise RequestSyntaxError(
            f'"{token}" would match nothing: it must be more than 0',
            token=token,
            accepted=WATCH_FORMS["max"],
        )
    return PriceCap(usd=usd, per_hour=bool(m.group("hourly")))


def _until(b: Builder, value: str, now: datetime) -> datetime:
    token = f"until={value}"
    try:
        when = b.start(value, token)
    except RequestSyntaxError as exc:
        accepted = WATCH_FORMS["until"]
        problem = exc.problem.replace("start ", "until ", 1)
        raise RequestSyntaxError(problem, token=token, accepted=accepted) from None
    if when - now > MAX_WATCH:
        raise RequestSyntaxError(
            f'"{token}" is more than 8 weeks away', token=token, accepted=WATCH_FORMS["until"]
        )
    if _DAY_RE.fullmatch(value):
        # A day given means through its end (as the default, the latest start's day).
        return end_of_day(date.fromisoformat(value))
    return when


def _auto(value: str) -> bool:
    if value != "submit":
        raise RequestSyntaxError(
            f'"auto={value}" is not something a watch does',
            token=f"auto={value}",
            accepted=WATCH_FORMS["auto"],
        )
    return True


def render_watch(ask: WatchAsk) -> str:
    parts = [render_request(ask.draft)]
    if ask.flex_hours:
        parts.append(f"flex={render_duration(ask.flex_hours)}")
    if ask.cap is not None:
        suffix = "/h" if ask.cap.per_hour else ""
        parts.append(f"max={ask.cap.usd:g}{suffix}")
    if ask.until is not None:
        whole_day = ask.until == end_of_day(ask.until.astimezone(UTC).date())
        parts.append(f"until={ask.until.date() if whole_day else render_start(ask.until)}")
    if ask.auto_submit:
        parts.append("auto=submit")
    return " ".join(parts)
