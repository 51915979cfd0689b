"""The optional outlook scan (`GPU_BOT_OUTLOOK_SHAPES`): which searches one round asks,
so that an outlook exists before anyone needs it. Pure.

Each configured shape asks, per kind it may be and region, one search over every start
from now to 8 weeks ahead (AWS sells blocks and plans at most that far ahead). A round is
at most MAX_SCAN_SEARCHES searches, once an hour: far inside EC2's request-rate bucket for
a describe call (a bucket of 100, refilled at 20 a second: "Request throttling for the
Amazon EC2 API", https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.domain import offering_rules as rules
from bot.domain.catalog import Catalog
from bot.domain.grammar import RequestSyntaxError
from bot.domain.market import ReservationKind
from bot.domain.outlook_query import OutlookQuery, parse_outlook
from bot.domain.request import ANY_REGION, Workload
from bot.domain.watch import Question

SCAN_EVERY = timedelta(hours=1)
SCAN_AHEAD = timedelta(weeks=8)
MAX_SCAN_SEARCHES = 20
# For region=any, where neither kind's catalog entry names regions.
USUAL_REGIONS = ("us-east-1", "us-east-2", "us-west-2")


def parse_scan_shapes(text: str, catalog: Catalog, now: datetime) -> list[OutlookQuery]:
    """`16x p5.48xlarge 3d region=any; 8x p4d.24xlarge 7d us-east-1` -> the queries;
    `RequestSyntaxError` names the shape that is wrong."""
    out = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        try:
            out.append(parse_outlook(part, now=now, catalog=catalog, max_days=365))
        except RequestSyntaxError as exc:
            raise RequestSyntaxError(f'"{part}": {exc.problem}', accepted=exc.accepted) from None
    return out


def scan_questions(
    queries: Sequence[OutlookQuery], catalog: Catalog, default_region: str, now: datetime
) -> list[Question]:
    """One round's searches, each asked once even when two shapes share it."""
    out: dict[str, Question] = {}
    for query in queries:
        entry = catalog.instance(query.instance_type)
        for shape in query.shapes:
            if shape.kind is ReservationKind.CAPACITY_BLOCK:
                listed = entry.capacity_blocks.regions
            else:
                listed = entry.training_plans.regions
            region = query.region or default_region
            regions = (listed or USUAL_REGIONS) if region == ANY_REGION else (region,)
            for name in regions:
                question = Question(
                    kind=shape.kind,
                    instance_type=shape.instance_type,
                    region=name,
                    count=shape.count,
                    duration_hours=shape.hours,
                    earliest=now,
                    latest_end=now + SCAN_AHEAD + timedelta(hours=shape.hours),
                    target=""
                    if shape.kind is ReservationKind.CAPACITY_BLOCK
                    else rules.training_plan_target(Workload.TRAINING),
                )
                out.setdefault(f"{shape.key}|{name}", question)
    return list(out.values())
