"""`/gpu outlook 16x p5.48xlarge 3d [region=…|region=any] [ec2|sagemaker] [days=30]`:
the request grammar without a start, and `days=` (how far back to look). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from bot.domain.catalog import Catalog, UnknownInstanceType
from bot.domain.grammar import RequestSyntaxError, parse_request
from bot.domain.grammar.tokens import tokenize
from bot.domain.outlook import Shape, shapes_for
from bot.domain.request import ANY_REGION, Environment

OUTLOOK_USAGE = (
    "`/gpu outlook COUNTx TYPE DURATION [region=NAME|region=any] [ec2|sagemaker] "
    "[days=N]`, for example `/gpu outlook 16x p5.48xlarge 3d region=any`"
)
_DAYS_RE = re.compile(r"days=(?P<n>[0-9]{1,4})d?", re.IGNORECASE)


@dataclass(frozen=True)
class OutlookQuery:
    instance_type: str
    count: int
    hours: int
    region: str | None  # None: the default region; "any": every region searched
    environment: Environment | None
    days: int
    shapes: tuple[Shape, ...]
    text: str = ""  # as typed

    def title(self, region: str) -> str:
        days = self.hours // 24
        length = f"{days}-day" if self.hours % 24 == 0 else f"{self.hours}-hour"
        where = "any region" if region == ANY_REGION else region
        return f"{self.count}x {self.instance_type}, {length}, {where}"


def parse_outlook(text: str, *, now: datetime, catalog: Catalog, max_days: int) -> OutlookQuery:
    """The query in `text`; `RequestSyntaxError` naming what is wrong and what is accepted."""
    days = max_days
    rest: list[str] = []
    for token in tokenize(text):
        m = _DAYS_RE.fullmatch(token)
        if token.lower().startswith("days="):
            if m is None or not 1 <= int(m["n"]) <= max_days:
                raise RequestSyntaxError(
                    f'"{token}" is over the outlook\'s window'
                    if m is not None
                    else f'"{token}" is not a number of days',
                    token=token,
                    accepted=f"days=1 to days={max_days} (the outlook keeps {max_days} days "
                    "of searches: GPU_BOT_OUTLOOK_DAYS)",
                )
            days = int(m["n"])
            continue
        rest.append(token)
    draft = parse_request(" ".join(_quoted(t) for t in rest), now=now, catalog=catalog)
    if draft.start is not None:
        raise RequestSyntaxError(
            "an outlook looks back at what searches saw: it takes no start",
            accepted=OUTLOOK_USAGE,
        )
    missing = [
        word
        for word, value in (
            ("a count", draft.count),
            ("an instance type", draft.instance_type),
            ("a duration", draft.duration_hours),
        )
        if value is None
    ]
    if missing:
        raise RequestSyntaxError(f"an outlook needs {', '.join(missing)}", accepted=OUTLOOK_USAGE)
    assert draft.count and draft.instance_type and draft.duration_hours
    shapes = shapes_for(draft.instance_type, draft.count, draft.duration_hours, draft.environment)
    never = _never_sold(catalog, draft.instance_type, draft.environment)
    if not shapes or never:
        raise RequestSyntaxError(
            f"AWS does not sell {draft.count}x {draft.instance_type} for "
            f"{draft.duration_hours}h as a Capacity Block or training plan"
            + (f" ({never})" if never else "")
            + ", so no search has anything to show",
            accepted="Capacity Blocks: 1 to 64 instances, 1-14 days or whole weeks to 182 "
            "days; training plans: 1, 2, 4, 8, 16, 32 or 64 instances",
        )
    return OutlookQuery(
        instance_type=draft.instance_type,
        count=draft.count,
        hours=draft.duration_hours,
        region=draft.region,
        environment=draft.environment,
        days=days,
        shapes=tuple(shapes),
        text=text,
    )


def _never_sold(catalog: Catalog, instance_type: str, env: Environment | None) -> str:
    try:
        entry = catalog.instance(instance_type)
    except UnknownInstanceType:
        return ""
    blocks = entry.capacity_blocks.offered and env is not Environment.SAGEMAKER
    plans = entry.training_plans.offered and env is not Environment.EC2
    if blocks or plans:
        return ""
    return f"{instance_type} is not sold as either"


def _quoted(token: str) -> str:
    return f'"{token}"' if " " in token else token
