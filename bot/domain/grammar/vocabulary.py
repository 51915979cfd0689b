"""The words of the request grammar: the forms each field accepts (quoted back to
whoever got one wrong), the patterns tokens are matched against, and the error."""

from __future__ import annotations

import re
from datetime import timedelta

from bot.domain.request import (
    Environment,
    Workload,
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
FIELD_FORMS = {"duration_hours": "duration", "utilization_pct": "utilization"}
# How a field is named to people: the code says utilization, people read British English
# (as everywhere else the bot writes: "expected utilisation").
FIELD_WORDS = {"utilization": "utilisation", "instance_type": "instance type"}


def field_word(field: str) -> str:
    return FIELD_WORDS.get(field, field.replace("_", " "))


# Times in requests are UTC; this is how far ahead a start may be asked for at all.
MAX_START_AHEAD = timedelta(days=2 * 365)

QUOTES = {'"': '"', "\u201c": "\u201d", "\u201d": "\u201d", "\u201e": "\u201d"}
CLOSE_QUOTES = {'"', "\u201d", "\u201c"}
# Looked up for each bare word of every command: sets, not a walk over the enums.
ENVIRONMENTS = frozenset(e.value for e in Environment)
WORKLOADS = frozenset(w.value for w in Workload)
INT_PATTERN = r"[0-9]{1,6}"
COUNT_RE = re.compile(rf"(?:(?P<a>{INT_PATTERN})x|x(?P<b>{INT_PATTERN}))")
DURATION_RE = re.compile(
    rf"(?P<n>{INT_PATTERN})\s*(?P<unit>h|hr|hrs|hour|hours|d|day|days|w|wk|wks|week|weeks)"
)
INSTANCE_RE = re.compile(r"(?:ml\.)?[a-z][a-z0-9-]*\.[a-z0-9]+")
REGION_RE = re.compile(r"[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}")
# After `region=`: anything shaped like a name; whether AWS has it is checked against the
# partition's list when the request is completed, which can name the valid ones.
REGION_NAME_RE = re.compile(r"[a-z][a-z0-9-]{1,30}")
MAX_SEARCHED_REGIONS = 8
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
DATETIME_RE = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})[tT ](?P<h>[0-9]{2}):(?P<m>[0-9]{2})"
    r"(?::(?P<s>[0-9]{2}))?(?P<tz>[zZ]|[+-][0-9]{2}:?[0-9]{2})?"
)
UTIL_RE = re.compile(r"(?P<n>[0-9]{1,3}(?:\.[0-9]+)?)(?P<pct>%?)")
UNIT_HOURS = {"h": 1, "d": 24, "w": 168}

KEY_ALIASES = {
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
ACCOUNT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


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


def bad_value(field: str, token: str) -> RequestSyntaxError:
    return RequestSyntaxError(
        f'"{token}" is not a valid {field_word(field)}',
        token=token,
        accepted=ACCEPTED_FORMS[field],
    )
