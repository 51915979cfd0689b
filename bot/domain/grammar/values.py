"""Reading each field's value, the same for the command text and the reserve form:
`Builder` collects the fields and refuses one given twice."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from bot.domain.catalog import Catalog, UnknownInstanceType
from bot.domain.grammar.render import render_duration, render_start
from bot.domain.grammar.vocabulary import (
    ACCEPTED_FORMS,
    COUNT_RE,
    DATE_RE,
    DATETIME_RE,
    DURATION_RE,
    FIELD_FORMS,
    INT_PATTERN,
    MAX_SEARCHED_REGIONS,
    MAX_START_AHEAD,
    REGION_NAME_RE,
    UNIT_HOURS,
    UTIL_RE,
    RequestSyntaxError,
    bad_value,
)
from bot.domain.request import (
    ANY_REGION,
    MAX_COUNT,
    MAX_DURATION_HOURS,
    MAX_REASON_CHARS,
    clean_text,
)


class Builder:
    """Collects fields from tokens, refusing a field given twice."""

    def __init__(self, catalog: Catalog, now: datetime) -> None:
        self.catalog = catalog
        self.now = now
        self.fields: dict[str, object] = {}

    def set(self, field: str, value: object, token: str) -> None:
        earlier = self.fields.get(field)
        if earlier is not None and earlier != value:
            name = FIELD_FORMS.get(field, field)
            raise RequestSyntaxError(
                f'{name.replace("_", " ")} is given twice: "{token}" conflicts with '
                f"{_shown(field, earlier)}",
                token=token,
                accepted=ACCEPTED_FORMS[name],
            )
        self.fields[field] = value

    # Each reader returns the value or raises RequestSyntaxError naming the token.

    def count(self, raw: str, token: str) -> int:
        if not re.fullmatch(INT_PATTERN, raw):
            m = COUNT_RE.fullmatch(raw)
            if not m:
                raise bad_value("count", token)
            raw = m.group("a") or m.group("b")
        n = int(raw)
        if not 1 <= n <= MAX_COUNT:
            raise RequestSyntaxError(
                f'count "{token}" is out of range', token=token, accepted=ACCEPTED_FORMS["count"]
            )
        return n

    def duration(self, raw: str, token: str) -> int:
        m = DURATION_RE.fullmatch(raw)
        if not m:
            raise bad_value("duration", token)
        hours = int(m.group("n")) * UNIT_HOURS[m.group("unit")[0]]
        if not 1 <= hours <= MAX_DURATION_HOURS:
            raise RequestSyntaxError(
                f'duration "{token}" is out of range',
                token=token,
                accepted=ACCEPTED_FORMS["duration"],
            )
        return hours

    def instance_type(self, raw: str, token: str) -> tuple[str, bool]:
        """The catalog name and whether the SageMaker `ml.` form was used."""
        try:
            entry = self.catalog.instance(raw)
        except UnknownInstanceType as exc:
            accepted = ", ".join(exc.suggestions) if exc.suggestions else "see `gpu-bot catalog`"
            raise RequestSyntaxError(
                f'unknown instance type "{token}"',
                token=token,
                accepted=f"known types such as {accepted}",
            ) from None
        return entry.instance_type, raw.startswith("ml.")

    def start(self, raw: str, token: str) -> datetime:
        now = self.now.astimezone(UTC).replace(second=0, microsecond=0)
        today = now.date()
        try:
            if raw in ("now", "today"):
                when = now
            elif raw == "tomorrow":
                when = _midnight(today + timedelta(days=1))
            elif DATE_RE.fullmatch(raw):
                when = _midnight(date.fromisoformat(raw))
            elif m := DATETIME_RE.fullmatch(raw):
                when = _datetime_from_match(m)
            else:
                raise bad_value("start", token)
        except (ValueError, OverflowError) as exc:
            if isinstance(exc, RequestSyntaxError):
                raise
            raise RequestSyntaxError(
                f'"{token}" is not a valid date or time',
                token=token,
                accepted=ACCEPTED_FORMS["start"],
            ) from None
        if when.date() < today:
            raise RequestSyntaxError(
                f'start "{token}" is in the past', token=token, accepted="today or later (UTC)"
            )
        # Earlier today means as soon as possible: a start in the past could never be
        # approved before it begins.
        when = max(when, now)
        if when - self.now > MAX_START_AHEAD:
            raise RequestSyntaxError(
                f'start "{token}" is too far ahead',
                token=token,
                accepted="a start within two years",
            )
        return when

    def utilization(self, raw: str, token: str) -> int:
        m = UTIL_RE.fullmatch(raw)
        if not m:
            raise bad_value("utilization", token)
        value = float(m.group("n"))
        if not m.group("pct") and value <= 1 and "." in m.group("n"):
            value *= 100  # util=0.8 means 80%
        pct = round(value)
        if not 1 <= pct <= 100:
            raise RequestSyntaxError(
                f'utilisation "{token}" is out of range',
                token=token,
                accepted=ACCEPTED_FORMS["utilization"],
            )
        return pct

    def reason(self, raw: str, token: str) -> str | None:
        text = clean_text(raw)
        if len(text) > MAX_REASON_CHARS:
            raise RequestSyntaxError(
                f"reason is {len(text)} characters long",
                token=None,
                accepted=ACCEPTED_FORMS["reason"],
            )
        return text or None


def _shown(field: str, value: object) -> str:
    if isinstance(value, datetime):
        shown = render_start(value)
    elif field == "duration_hours" and isinstance(value, int):
        shown = render_duration(value)
    elif field == "utilization_pct":
        shown = f"{value}%"
    else:
        shown = str(value)
    return f'"{shown}"'


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0, 0), tzinfo=UTC)


def _datetime_from_match(m: re.Match[str]) -> datetime:
    day = date.fromisoformat(m.group("date"))
    clock = time(int(m.group("h")), int(m.group("m")), int(m.group("s") or 0))
    tz = m.group("tz")
    when = datetime.combine(day, clock, tzinfo=UTC)
    if tz and tz not in ("z", "Z"):
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if offset >= timedelta(hours=24):
            raise ValueError("offset out of range")
        when = when - sign * offset
    return when


def region_value(value: str, token: str) -> str:
    """One region, `any`, or a comma-separated list (canonical: no spaces, no repeats)."""
    value = value.strip().lower()
    if value == ANY_REGION:
        return value
    names = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    if not names or not all(REGION_NAME_RE.fullmatch(n) for n in names):
        raise bad_value("region", token)
    if len(names) > MAX_SEARCHED_REGIONS:
        raise RequestSyntaxError(
            f"{len(names)} regions is too many to search at once",
            token=token,
            accepted=f"up to {MAX_SEARCHED_REGIONS} regions, or region=any",
        )
    return ",".join(names)
