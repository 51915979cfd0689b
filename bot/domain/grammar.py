"""The request grammar shared by `/gpu reserve`, `/gpu quote` and `gpu-bot quote`.

Tokens may come in any order:

    2x | x2 | count=2                      instance count
    p5.48xlarge | ml.p5.48xlarge | type=…  instance type (ml. means SageMaker)
    36h | 3d | 2w | duration=3d            duration
    from 2026-12-14 | from 2026-12-14T09:00Z | from today | from tomorrow | start=…
    us-east-1 | region=us-east-1           region
    region=us-east-1,us-west-2 | region=any  search several regions, recommend one
    ec2 | sagemaker | env=…                environment
    training | inference | evaluation | event | workload=…
    interruptible                          the work checkpoints and can restart
    util=80%                               expected utilisation of the window
    reason="launch load test"              why (double quotes; \\" and \\\\ escape)

`parse_request` returns a `RequestDraft`; it raises only `RequestSyntaxError`.
`render_request` gives the canonical text, which parses back to the same draft.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta

from bot.domain.catalog import Catalog, UnknownInstanceType, default_catalog
from bot.domain.request import (
    ANY_REGION,
    MAX_COUNT,
    MAX_DURATION_HOURS,
    MAX_REASON_CHARS,
    Environment,
    RequestDraft,
    Workload,
    clean_text,
)

ACCEPTED_FORMS: dict[str, str] = {
    "count": "2x, x2 or count=2 (1 to 1024)",
    "instance_type": "an instance type such as p5.48xlarge or ml.p5.48xlarge",
    "duration": "36h, 3d, 2w or duration=3d (1 hour to 365 days)",
    "start": "from 2026-12-14, from 2026-12-14T09:00Z, from now (or today), from tomorrow "
    "or start=…",
    "region": "us-east-1, region=us-east-1, region=us-east-1,us-west-2 (search those) or "
    "region=any",
    "environment": "ec2 or sagemaker",
    "workload": "training, inference, evaluation or event",
    "interruptible": "interruptible (the work checkpoints and can restart on Spot)",
    "utilization": "util=80% (1% to 100%)",
    "reason": 'reason="launch load test" (up to 500 characters; needed to submit for '
    "approval, and asked for then when not given here)",
    "account": "account=research (a name from GPU_BOT_ACCOUNTS; default: the bot's own)",
}

# Draft field name -> the ACCEPTED_FORMS entry that explains it.
_FIELD_FORMS = {"duration_hours": "duration", "utilization_pct": "utilization"}
# How a field is named to people: the code says utilization, people read British English
# (as everywhere else the bot writes: "expected utilisation").
FIELD_WORDS = {"utilization": "utilisation", "instance_type": "instance type"}


def field_word(field: str) -> str:
    return FIELD_WORDS.get(field, field.replace("_", " "))


# Times in requests are UTC; this is how far ahead a start may be asked for at all.
MAX_START_AHEAD = timedelta(days=2 * 365)

_QUOTES = {'"': '"', "\u201c": "\u201d", "\u201d": "\u201d", "\u201e": "\u201d"}
_CLOSE_QUOTES = {'"', "\u201d", "\u201c"}
# Looked up for each bare word of every command: sets, not a walk over the enums.
_ENVIRONMENTS = frozenset(e.value for e in Environment)
_WORKLOADS = frozenset(w.value for w in Workload)
_INT = r"[0-9]{1,6}"
_COUNT_RE = re.compile(rf"(?:(?P<a>{_INT})x|x(?P<b>{_INT}))")
_DURATION_RE = re.compile(
    rf"(?P<n>{_INT})\s*(?P<unit>h|hr|hrs|hour|hours|d|day|days|w|wk|wks|week|weeks)"
)
_INSTANCE_RE = re.compile(r"(?:ml\.)?[a-z][a-z0-9-]*\.[a-z0-9]+")
_REGION_RE = re.compile(r"[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}")
# After `region=`: anything shaped like a name; whether AWS has it is checked against the
# partition's list when the request is completed, which can name the valid ones.
_REGION_NAME_RE = re.compile(r"[a-z][a-z0-9-]{1,30}")
MAX_SEARCHED_REGIONS = 8
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME_RE = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[tT ](?P<h>[0-9]{2}):(?P<m>[0-9]{2})"
    r"(?::(?P<s>[0-9]{2}))?(?P<tz>[zZ]|[+-][0-9]{2}:?[0-9]{2})?"
)
_UTIL_RE = re.compile(r"(?P<n>[0-9]{1,3}(?:\.[0-9]+)?)(?P<pct>%?)")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 168}

_KEY_ALIASES = {
    "count": "count",
    "n": "count",
    "type": "instance_type",
    "instance": "instance_type",
    "instance_type": "instance_type",
    "duration": "duration",
    "for": "duration",
    "start": "start",
    "from": "start",
    "region": "region",
    "env": "environment",
    "environment": "environment",
    "workload": "workload",
    "util": "utilization",
    "utilization": "utilization",
    "utilisation": "utilization",
    "reason": "reason",
    "interruptible": "interruptible",
    "account": "account",
}
_ACCOUNT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


class RequestSyntaxError(ValueError):
    """Bad request text. `token` is the offending token (or None), `accepted` the forms."""

    def __init__(self, problem: str, *, token: str | None = None, accepted: str | None = None):
        self.problem = problem
        self.token = token
        self.accepted = accepted
        message = problem
        if accepted:
            message += f". Accepted: {accepted}"
        super().__init__(message)


def usage() -> str:
    lines = [f"• {field_word(name)}: {form}" for name, form in ACCEPTED_FORMS.items()]
    return "\n".join(lines)


def _tokenize(text: str) -> list[str]:
    """Split on whitespace outside double quotes (straight or curly); drop the quotes."""
    if not any(quote in text for quote in _QUOTES):
        return text.split()  # the usual command: nothing quoted
    tokens: list[str] = []
    current: list[str] = []
    in_token = False
    closing: str | None = None
    chars = iter(text)
    for ch in chars:
        if closing is not None:
            if ch == "\\" and closing == '"':
                nxt = next(chars, None)
                if nxt is None:
                    break
                current.append(nxt)
            elif ch == closing or (closing != '"' and ch in _CLOSE_QUOTES):
                closing = None
            else:
                current.append(ch)
        elif ch in _QUOTES:
            closing = _QUOTES[ch]
            in_token = True
        elif ch.isspace():
            if in_token:
                tokens.append("".join(current))
                current, in_token = [], False
        else:
            current.append(ch)
            in_token = True
    if closing is not None:
        raise RequestSyntaxError("a quote is not closed", accepted='reason="text in double quotes"')
    if in_token:
        tokens.append("".join(current))
    return tokens


class _Builder:
    """Collects fields from tokens, refusing a field given twice."""

    def __init__(self, catalog: Catalog, now: datetime) -> None:
        self.catalog = catalog
        self.now = now
        self.fields: dict[str, object] = {}

    def set(self, field: str, value: object, token: str) -> None:
        earlier = self.fields.get(field)
        if earlier is not None and earlier != value:
            name = _FIELD_FORMS.get(field, field)
            raise RequestSyntaxError(
                f'{name.replace("_", " ")} is given twice: "{token}" conflicts with '
                f"{_shown(field, earlier)}",
                token=token,
                accepted=ACCEPTED_FORMS[name],
            )
        self.fields[field] = value

    # Each reader returns the value or raises RequestSyntaxError naming the token.

    def count(self, raw: str, token: str) -> int:
        if not re.fullmatch(_INT, raw):
            m = _COUNT_RE.fullmatch(raw)
            if not m:
                raise _bad("count", token)
            raw = m.group("a") or m.group("b")
        n = int(raw)
        if not 1 <= n <= MAX_COUNT:
            raise RequestSyntaxError(
                f'count "{token}" is out of range', token=token, accepted=ACCEPTED_FORMS["count"]
            )
        return n

    def duration(self, raw: str, token: str) -> int:
        m = _DURATION_RE.fullmatch(raw)
        if not m:
            raise _bad("duration", token)
        hours = int(m.group("n")) * _UNIT_HOURS[m.group("unit")[0]]
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
            elif _DATE_RE.fullmatch(raw):
                when = _midnight(date.fromisoformat(raw))
            elif m := _DATETIME_RE.fullmatch(raw):
                when = _datetime_from_match(m)
            else:
                raise _bad("start", token)
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
        m = _UTIL_RE.fullmatch(raw)
        if not m:
            raise _bad("utilization", token)
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


def _bad(field: str, token: str) -> RequestSyntaxError:
    return RequestSyntaxError(
        f'"{token}" is not a valid {field_word(field)}',
        token=token,
        accepted=ACCEPTED_FORMS[field],
    )


def parse_request(text: str, *, now: datetime, catalog: Catalog | None = None) -> RequestDraft:
    """Parse request text into a draft. Raises only `RequestSyntaxError`."""
    builder = _Builder(catalog or default_catalog(), now)
    tokens = _tokenize(text)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        lowered = token.lower()
        if lowered in ("from", "start", "for") and i >= len(tokens):
            raise RequestSyntaxError(
                f'"{token}" needs a value after it',
                token=token,
                accepted=ACCEPTED_FORMS["duration" if lowered == "for" else "start"],
            )
        if lowered in ("from", "start"):
            value = tokens[i]
            i += 1
            builder.set("start", builder.start(value.lower(), f"{token} {value}"), token)
            continue
        if lowered == "for":
            value = tokens[i]
            i += 1
            builder.set("duration_hours", builder.duration(value.lower(), value), value)
            continue
        _read_token(builder, token)
    return _draft(builder)


def _read_token(b: _Builder, token: str) -> None:
    lowered = token.lower()
    key, sep, value = lowered.partition("=")
    if sep:
        field = _KEY_ALIASES.get(key.strip())
        if field is None:
            raise RequestSyntaxError(
                f'unknown setting "{key}" in "{token}"',
                token=token,
                accepted="count=, type=, duration=, start=, region=, env=, workload=, "
                "util=, reason=, account=",
            )
        if field == "reason":
            # Keep the reason's case and spacing: only the key is case-insensitive.
            b.set("reason", b.reason(token.partition("=")[2], token), token)
            return
        _read_field(b, field, value.strip(), token)
        return
    if lowered == "interruptible":
        b.set("interruptible", True, token)
    elif lowered in _ENVIRONMENTS:
        b.set("environment", Environment(lowered), token)
    elif lowered in _WORKLOADS:
        b.set("workload", Workload(lowered), token)
    elif _COUNT_RE.fullmatch(lowered):
        b.set("count", b.count(lowered, token), token)
    elif _DURATION_RE.fullmatch(lowered):
        b.set("duration_hours", b.duration(lowered, token), token)
    elif _REGION_RE.fullmatch(lowered):
        b.set("region", lowered, token)
    elif _INSTANCE_RE.fullmatch(lowered):
        _set_instance(b, lowered, token)
    elif re.fullmatch(_INT, lowered):
        raise RequestSyntaxError(
            f'"{token}" is a bare number',
            token=token,
            accepted=f"{token}x for a count, {token}d or {token}h for a duration",
        )
    else:
        raise RequestSyntaxError(
            f'"{token}" is not something a request understands',
            token=token,
            accepted="; ".join(ACCEPTED_FORMS.values()),
        )


def _read_field(b: _Builder, field: str, value: str, token: str) -> None:
    if field == "count":
        b.set("count", b.count(value, token), token)
    elif field == "instance_type":
        _set_instance(b, value, token)
    elif field == "duration":
        b.set("duration_hours", b.duration(value, token), token)
    elif field == "start":
        b.set("start", b.start(value, token), token)
    elif field == "region":
        b.set("region", _region_value(value, token), token)
    elif field == "environment":
        if value not in (e.value for e in Environment):
            raise _bad("environment", token)
        b.set("environment", Environment(value), token)
    elif field == "workload":
        if value not in (w.value for w in Workload):
            raise _bad("workload", token)
        b.set("workload", Workload(value), token)
    elif field == "utilization":
        b.set("utilization_pct", b.utilization(value, token), token)
    elif field == "account":
        if not _ACCOUNT_RE.fullmatch(value):
            raise _bad("account", token)
        b.set("account", value, token)
    elif field == "interruptible":
        if value not in ("yes", "true", "no", "false"):
            raise RequestSyntaxError(
                f'"{token}" is not yes or no', token=token, accepted="interruptible=yes|no"
            )
        b.set("interruptible", value in ("yes", "true"), token)


def _set_instance(b: _Builder, value: str, token: str) -> None:
    name, sagemaker_form = b.instance_type(value, token)
    b.set("instance_type", name, token)
    if sagemaker_form:
        if b.fields.get("environment") == Environment.EC2:
            raise RequestSyntaxError(
                f'"{token}" is a SageMaker name but ec2 was asked for',
                token=token,
                accepted=f"{name} with ec2, or {token} (SageMaker)",
            )
        b.set("environment", Environment.SAGEMAKER, token)


def _draft(b: _Builder) -> RequestDraft:
    return RequestDraft.model_validate(b.fields)


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
        single = _REGION_RE.fullmatch(draft.region)
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


def parse_form(
    fields: dict[str, str | None], *, now: datetime, catalog: Catalog | None = None
) -> tuple[RequestDraft, dict[str, str]]:
    """The reserve form's fields -> (draft, errors by field name).

    Each field goes through the same readers as the text grammar, so a form and a
    command accept exactly the same values. Empty optional fields are simply left out.
    """
    b = _Builder(catalog or default_catalog(), now)
    errors: dict[str, str] = {}

    def read(name: str, store_as: str, reader: Callable[[str, str], object]) -> None:
        raw = (fields.get(name) or "").strip()
        if not raw:
            return
        try:
            b.fields[store_as] = reader(raw.lower() if name != "reason" else raw, raw)
        except RequestSyntaxError as exc:
            errors[name] = str(exc)

    read("count", "count", b.count)
    read("instance_type", "instance_type", lambda v, t: b.instance_type(v, t)[0])
    read("duration", "duration_hours", b.duration)
    date_text = (fields.get("start_date") or "").strip()
    if date_text:
        time_text = (fields.get("start_time") or "").strip()
        stamp = f"{date_text}T{time_text}Z" if time_text else date_text
        try:
            b.fields["start"] = b.start(stamp.lower(), stamp)
        except RequestSyntaxError as exc:
            errors["start_date"] = str(exc)
    read("region", "region", _region_value)
    # A value the form does not offer is refused, not read as "either" ("any").
    env = (fields.get("environment") or "").strip().lower()
    if env in (e.value for e in Environment):
        b.fields["environment"] = Environment(env)
    elif env not in ("", "any"):
        errors["environment"] = f"environment {clean_text(env)[:40]!r}: accepted: ec2 or sagemaker"
    workload = (fields.get("workload") or "").strip().lower()
    if workload in (w.value for w in Workload):
        b.fields["workload"] = Workload(workload)
    elif workload:
        errors["workload"] = (
            f"workload {clean_text(workload)[:40]!r}: accepted: {ACCEPTED_FORMS['workload']}"
        )
    b.fields["interruptible"] = bool((fields.get("interruptible") or "").strip())
    read("utilization", "utilization_pct", b.utilization)
    read("reason", "reason", b.reason)
    account = (fields.get("account") or "").strip().lower()
    if account and _ACCOUNT_RE.fullmatch(account):
        b.fields["account"] = account
    elif account:
        errors["account"] = str(_bad("account", account))
    draft = RequestDraft.model_validate({k: v for k, v in b.fields.items() if v is not None})
    for name in draft.missing():
        errors.setdefault("start_date" if name == "start" else name, f"{name} is required")
    return draft, errors


def _region_value(value: str, token: str) -> str:
    """One region, `any`, or a comma-separated list (canonical: no spaces, no repeats)."""
    value = value.strip().lower()
    if value == ANY_REGION:
        return value
    names = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    if not names or not all(_REGION_NAME_RE.fullmatch(n) for n in names):
        raise _bad("region", token)
    if len(names) > MAX_SEARCHED_REGIONS:
        raise RequestSyntaxError(
            f"{len(names)} regions is too many to search at once",
            token=token,
            accepted=f"up to {MAX_SEARCHED_REGIONS} regions, or region=any",
        )
    return ",".join(names)
