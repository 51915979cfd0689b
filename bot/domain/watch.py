"""A watch: a request for a Capacity Block or training plan not offered yet, looked for
round after round until it is found or the watch ends.

Pure: the model, what makes an offering fit, what makes one better than the last sent,
the shared question several watches ask with one AWS call, and how often to ask.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from bot.domain import offering_rules as rules
from bot.domain.market import Offering, ReservationKind
from bot.domain.request import CapacityRequest, Environment

# How far past the asked start the start may move at most (flex=), and how long a watch
# lasts at most: Capacity Blocks are sold up to 8 weeks ahead, so looking longer finds
# nothing the first eight weeks would not.
MAX_FLEX = timedelta(weeks=8)
MAX_WATCH = timedelta(weeks=8)
# A later match is sent again when it starts earlier or costs this much less.
BETTER_BY = 0.05
# The rhythm: ask more often as the wanted start comes closer.
RHYTHM: tuple[tuple[timedelta, timedelta], ...] = (
    (timedelta(days=2), timedelta(minutes=5)),
    (timedelta(days=7), timedelta(minutes=15)),
)
FAR_ROUND = timedelta(hours=1)
# The watch rounds' AWS calls are counted in windows of this length: at most
# `WatchLimits.searches_per_window` searches in each, whatever the number of questions.
SEARCH_WINDOW = timedelta(minutes=1)


# The defaults of GPU_BOT_WATCHES_PER_PERSON, GPU_BOT_WATCHES_TOTAL and
# GPU_BOT_WATCH_SEARCHES_PER_MINUTE: enough for a person's few needs at a time; a few
# hundred people's in all; a tenth of a minute's refill of EC2's describe bucket (20 a
# second), leaving the quotes and other teams' calls the rest.
WATCHES_PER_PERSON = 20
WATCHES_TOTAL = 500
SEARCHES_PER_WINDOW = 10


@dataclass(frozen=True)
class WatchLimits:
    """How many watches one person, and everyone, may have watching at once, and how many
    offering searches the rounds make in a `SEARCH_WINDOW` (the rest wait their turn)."""

    per_person: int
    total: int
    searches_per_window: int


def search_window(now: datetime) -> int:
    """The number of the `SEARCH_WINDOW` `now` falls in (counted from the epoch)."""
    return int(now.timestamp() // SEARCH_WINDOW.total_seconds())


def window_start(window: int) -> datetime:
    return datetime.fromtimestamp(window * SEARCH_WINDOW.total_seconds(), tz=UTC)


class WatchState(StrEnum):
    WATCHING = "watching"
    STOPPED = "stopped"  # by the watcher or an approver
    ENDED = "ended"  # its date came


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PriceCap(_Frozen):
    """The most a match may cost: per instance-hour, or in all."""

    usd: float
    per_hour: bool

    def allows(self, offering: Offering) -> bool:
        if self.per_hour:
            return offering.hourly_usd <= self.usd + 1e-9
        return offering.upfront_usd <= self.usd + 1e-9

    def describe(self) -> str:
        return f"${self.usd:,.2f}/instance-hour" if self.per_hour else f"${self.usd:,.0f} in all"


class Seen(_Frozen):
    """The best offering a watch saw, and why it did not fit (empty: it fitted)."""

    offering_id: str
    region: str
    start: datetime
    upfront_usd: float
    hourly_usd: float
    why_not: str = ""


class Sent(_Frozen):
    """A match sent: what it was, so a later one is sent only when it is better."""

    offering_id: str
    region: str
    start: datetime
    upfront_usd: float


class Watch(_Frozen):
    id: str
    watcher: str
    request: CapacityRequest  # region may be one, several or "any"
    flex_hours: int = 0
    cap: PriceCap | None = None
    until: datetime
    auto_submit: bool = False
    state: WatchState = WatchState.WATCHING
    created_at: datetime
    text: str = ""
    best_seen: Seen | None = None
    sent: tuple[Sent, ...] = ()
    ended_note: str = ""

    @property
    def latest_start(self) -> datetime:
        """The latest start that fits: through the end of the (UTC) day of start + flex,
        since blocks and plans start at set times of day (a block at 11:30 UTC)."""
        return latest_start(self.request.start, self.flex_hours)

    @property
    def window_end(self) -> datetime:
        return self.latest_start + timedelta(hours=self.request.duration_hours)

    def kinds(self) -> tuple[ReservationKind, ...]:
        """What it may be: a Capacity Block runs on EC2, a training plan on SageMaker."""
        env = self.request.environment
        if env is Environment.EC2:
            return (ReservationKind.CAPACITY_BLOCK,)
        if env is Environment.SAGEMAKER:
            return (ReservationKind.TRAINING_PLAN,)
        return (ReservationKind.CAPACITY_BLOCK, ReservationKind.TRAINING_PLAN)


def end_of_day(day: date) -> datetime:
    """The last second of a UTC day: a watch `until` a day watches through it."""
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def latest_start(start: datetime, flex_hours: int) -> datetime:
    moved = (start + timedelta(hours=flex_hours)).astimezone(UTC)
    return end_of_day(moved.date())


def default_until(request: CapacityRequest, flex_hours: int, now: datetime) -> datetime:
    """The latest start that still fits, at most 8 weeks from now."""
    return min(latest_start(request.start, flex_hours), now + MAX_WATCH)


class Question(_Frozen):
    """What one AWS call asks: watches asking the same share the answer."""

    kind: ReservationKind
    instance_type: str
    region: str
    count: int
    duration_hours: int
    earliest: datetime
    latest_end: datetime
    target: str = ""  # a training plan's TargetResources (what it serves)
    account: str | None = None  # a name from GPU_BOT_ACCOUNTS; None: the default account

    @property
    def key(self) -> str:
        text = "|".join(
            (
                self.kind.value,
                self.instance_type,
                self.region,
                str(self.count),
                str(self.duration_hours),
                self.earliest.isoformat(),
                self.latest_end.isoformat(),
                self.target,
                self.account or "",
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def questions(watch: Watch, regions: tuple[str, ...]) -> list[Question]:
    """The questions a watch asks, one per kind it may be and region searched (`regions`:
    the ones its request names, resolved by the caller for `any`). A duration or count
    AWS does not sell for a kind asks nothing of that kind."""
    out: list[Question] = []
    req = watch.request
    for kind in watch.kinds():
        if kind is ReservationKind.CAPACITY_BLOCK:
            hours = rules.capacity_block_duration_for(req.duration_hours)
            count: int | None = req.count if req.count <= rules.CB_MAX_INSTANCES_PER_BLOCK else None
        else:
            hours = rules.training_plan_duration_for(req.duration_hours)
            count = rules.training_plan_count_for(req.count)
        if hours is None or count is None:
            continue
        latest_end = watch.latest_start + timedelta(hours=hours, days=1)
        for region in regions:
            out.append(
                Question(
                    kind=kind,
                    instance_type=req.instance_type,
                    region=region,
                    count=count,
                    duration_hours=hours,
                    earliest=req.start,
                    latest_end=latest_end,
                    target=""
                    if kind is ReservationKind.CAPACITY_BLOCK
                    else rules.training_plan_target(req.workload),
                    account=req.account,
                )
            )
    return out


def why_not(watch: Watch, offering: Offering, region: str) -> str:
    """Why an offering does not fit the watch; "" when it does. Each rule says its field."""
    req = watch.request
    if offering.kind not in watch.kinds():
        return f"it is a {offering.kind.value}, and {req.environment} was asked for"
    if offering.instance_type.removeprefix("ml.") != req.instance_type:
        return f"it is {offering.instance_type}, not {req.instance_type}"
    if offering.count < req.count:
        return f"it has {offering.count} instances, {req.count} were asked for"
    if offering.duration_hours + 1e-9 < req.duration_hours:
        return f"it lasts {offering.duration_hours:g}h, {req.duration_hours}h were asked for"
    if offering.start < req.start:
        return f"it starts {offering.start:%Y-%m-%d %H:%M} UTC, before the asked start"
    if offering.start > watch.latest_start:
        return f"it starts {offering.start:%Y-%m-%d %H:%M} UTC, past the flex window"
    if not _region_fits(req.region, region):
        return f"it is in {region}, outside the regions asked for"
    if watch.cap is not None and not watch.cap.allows(offering):
        shown = (
            f"${offering.hourly_usd:,.2f}/instance-hour"
            if watch.cap.per_hour
            else f"${offering.upfront_usd:,.0f}"
        )
        return f"it costs {shown}, over max {watch.cap.describe()}"
    return ""


def _region_fits(asked: str, region: str) -> bool:
    if asked == "any":
        return True
    return region in asked.split(",")


def _rank(offering: Offering) -> tuple[datetime, float]:
    return (offering.start, offering.upfront_usd)


def best_fit(
    watch: Watch, found: list[tuple[str, Offering]]
) -> tuple[tuple[str, Offering] | None, Seen | None]:
    """The fitting offering to send (earliest, then cheapest) and the best seen overall
    (the fitting one, else the closest: for the watch's end note)."""
    fits = [(r, o) for r, o in found if not why_not(watch, o, r)]
    if fits:
        region, best = min(fits, key=lambda ro: _rank(ro[1]))
        return (region, best), _seen(best, region, "")
    if not found:
        return None, None
    priced = sorted(found, key=lambda ro: (ro[1].upfront_usd, ro[1].start))
    region, near = priced[0]
    return None, _seen(near, region, why_not(watch, near, region))


def _seen(offering: Offering, region: str, reason: str) -> Seen:
    return Seen(
        offering_id=offering.offering_id,
        region=region,
        start=offering.start,
        upfront_usd=offering.upfront_usd,
        hourly_usd=round(offering.hourly_usd, 4),
        why_not=reason,
    )


def better(candidate: Offering, sent: tuple[Sent, ...], margin: float = BETTER_BY) -> bool:
    """Whether a fitting offering is worth sending after `sent`: never the same one again;
    else when nothing was sent, or it starts earlier than the last sent, or costs at
    least `margin` less."""
    if any(s.offering_id == candidate.offering_id for s in sent):
        return False
    if not sent:
        return True
    last = sent[-1]
    if candidate.start < last.start:
        return True
    return candidate.upfront_usd <= last.upfront_usd * (1 - margin) + 1e-9


def round_every(wanted_start: datetime, now: datetime) -> timedelta:
    """How long until the next round: 5 min within 2 days of the wanted start, 15 min
    within a week, an hour further away."""
    ahead = wanted_start - now
    for within, every in RHYTHM:
        if ahead < within:
            return every
    return FAR_ROUND


def next_round(watches: list[Watch], now: datetime) -> datetime | None:
    """When the watches sharing a question should be asked again (None: none watches)."""
    live = [w for w in watches if w.state is WatchState.WATCHING and w.until > now]
    if not live:
        return None
    soonest = min(w.request.start for w in live)
    return now + round_every(soonest, now)


def watch_number(watch_id: str) -> int:
    digits = watch_id.upper().lstrip("W")
    return int(digits) if digits.isdigit() else 0


def normalise_watch_id(raw: str) -> str:
    raw = raw.strip().upper()
    return raw if raw.startswith("W") else f"W{raw}"


def utc(when: datetime) -> datetime:
    return when.astimezone(UTC)


STOPPED_BY_WATCHER = "stopped by its watcher"
_STOPPED_BY = re.compile(r"stopped by ([UW][A-Z0-9]{2,})")


def stopped_by(user: str) -> str:
    """The note of a watch stopped by someone else: their user id (shown as a mention)."""
    return f"stopped by {user}"


def stopper(note: str) -> str | None:
    """Who stopped a watch, from its note, when it was not its watcher."""
    found = _STOPPED_BY.fullmatch(note)
    return found.group(1) if found else None


def match_key(watch_id: str, offering_id: str) -> str:
    """The key of the request a match made (one per watch and offering)."""
    return f"watch:{watch_id}:{offering_id}"
