"""Watches: `/gpu watch` makes one, `/gpu watches` lists them, `/gpu unwatch` stops one,
and each ends by its date saying what it found (or the best it saw, and why not).

The rounds that look for offerings and the messages of what they find are
bot/services/watch_rounds.py; the job kinds of both are declared here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.domain.audit import AuditEntry
from bot.domain.catalog import Catalog
from bot.domain.grammar import duration_words
from bot.domain.market import ReservationKind
from bot.domain.request import ANY_REGION, CapacityRequest, IncompleteRequest, searched_regions
from bot.domain.watch import (
    MAX_WATCH,
    STOPPED_BY_WATCHER,
    Question,
    Watch,
    WatchLimits,
    WatchState,
    default_until,
    normalise_watch_id,
    questions,
    stopped_by,
)
from bot.domain.watch_grammar import WatchAsk, parse_watch, render_watch
from bot.services.jobs import JobKind, Retries, _Payload
from bot.services.ports import Clock
from bot.services.ports.jobs import Job
from bot.services.ports.watches import WatchesFull, WatchStore
from bot.services.quoting import BROAD_REGIONS, QuoteService


class RoundJob(_Payload):
    """One round of one question: every watch asking it, one AWS call."""

    question: str
    job: str  # its own id, to retire the question by


class MatchJob(_Payload):
    """A match recorded for a watch: make its request, send the message."""

    watch: str
    offering: dict[str, Any]
    region: str


class WatchJob(_Payload):
    watch: str


# A round gives itself back for the next one; throttled, it backs off from a minute to
# half an hour (the SDK has retried already), for days before an operator hears of it.
ROUND_RETRIES = Retries(attempts=60, first=timedelta(minutes=1), longest=timedelta(minutes=30))
WATCH_ROUND = JobKind("watch-round", RoundJob, ROUND_RETRIES)
WATCH_MATCH = JobKind("watch-match", MatchJob)
WATCH_END = JobKind("watch-end", WatchJob)
WATCH_KINDS = (WATCH_ROUND, WATCH_MATCH, WATCH_END)


class WatchError(Exception):
    """A watch cannot be made or changed as asked; the message says why."""


@dataclass(frozen=True)
class Made:
    watch: Watch
    asked: tuple[Question, ...]


class WatchService:
    def __init__(
        self,
        watches: WatchStore,
        quotes: QuoteService,
        catalog: Catalog,
        clock: Clock,
        is_approver: Callable[[str], bool],
        limits: WatchLimits,
    ) -> None:
        """`is_approver(user) -> bool`: approvers see and stop everyone's watches."""
        self.watches = watches
        self.quotes = quotes
        self.catalog = catalog
        self.clock = clock
        self.is_approver = is_approver
        self.limits = limits

    # --- asking ---------------------------------------------------------------------

    def check(self, user: str, text: str) -> Made:
        """The watch `text` asks for, checked (pure and fast: it answers in the ack).
        `RequestSyntaxError` or `WatchError` say what is wrong; nothing is stored."""
        now = self.clock.now()
        ask = parse_watch(text, now=now, catalog=self.catalog)
        try:
            request = self.quotes.complete(ask.draft)
        except IncompleteRequest as exc:
            raise WatchError(f"A watch needs {', '.join(exc.missing)}.") from None
        watch = self._watch(user, ask, request, now)
        asked = questions(watch, self.regions(watch))
        if not asked:
            raise WatchError(self._never_sold(watch))
        return Made(watch, tuple(asked))

    def _watch(self, user: str, ask: WatchAsk, request: CapacityRequest, now: datetime) -> Watch:
        if request.start > now + MAX_WATCH:
            latest = (now + MAX_WATCH).date().isoformat()
            raise WatchError(
                "AWS offers Capacity Blocks and training plans at most 8 weeks ahead: give a "
                f"start by {latest}, or start watching later."
            )
        until = ask.until or default_until(request, ask.flex_hours, now)
        if until <= now:
            raise WatchError("Until is in the past: give a later until= (today or later).")
        return Watch(
            id="W?",
            watcher=user,
            request=request,
            flex_hours=ask.flex_hours,
            cap=ask.cap,
            until=until,
            auto_submit=ask.auto_submit,
            created_at=now,
            text=render_watch(ask),
        )

    def regions(self, watch: Watch) -> tuple[str, ...]:
        """The regions a watch searches: its own, the ones named, or for `any` where the
        catalog says blocks or plans of the type are sold (and the usual ones)."""
        region = watch.request.region
        names = searched_regions(region)
        if names is None:
            listed: tuple[str, ...] = (region,)
        elif names:
            listed = names
        else:
            entry = self.catalog.instance(watch.request.instance_type)
            listed = (*entry.capacity_blocks.regions, *entry.training_plans.regions)
            listed = listed or BROAD_REGIONS
        sells = [self._sells(watch, r) for r in dict.fromkeys(listed)]
        return tuple(r for r, ok in zip(dict.fromkeys(listed), sells, strict=True) if ok)

    def _sells(self, watch: Watch, region: str) -> bool:
        entry = self.catalog.instance(watch.request.instance_type)
        kinds = watch.kinds()
        block = ReservationKind.CAPACITY_BLOCK in kinds and entry.capacity_blocks.offered
        plan = ReservationKind.TRAINING_PLAN in kinds and entry.training_plans.offered
        in_block = block and (
            not entry.capacity_blocks.regions or region in entry.capacity_blocks.regions
        )
        in_plan = plan and (
            not entry.training_plans.regions or region in entry.training_plans.regions
        )
        return in_block or in_plan

    def _never_sold(self, watch: Watch) -> str:
        """Why a watch would ask nothing: the type is not sold as a block or plan where
        it looks (naming where it is, or that no region is known), or the size or length
        is one AWS never sells."""
        req = watch.request
        entry = self.catalog.instance(req.instance_type)
        kinds = " or ".join(k.value.replace("-", " ") for k in watch.kinds())
        limits = (
            "Capacity Blocks: 1 to 64 instances, 1-14 days or whole weeks to 182 days; "
            "training plans: 1, 2, 4, 8, 16, 32 or 64 instances."
        )
        if self.regions(watch):  # sold where it looks: the size or the length is not
            return (
                f"AWS does not sell {req.count}x {req.instance_type} for "
                f"{duration_words(req.duration_hours)} as a {kinds}, so there is nothing "
                f"to watch for. {limits}"
            )
        listed = {*entry.capacity_blocks.regions, *entry.training_plans.regions}
        where = [r for r in BROAD_REGIONS if r in listed] + sorted(listed - {*BROAD_REGIONS})
        place = "in any region" if req.region == ANY_REGION else f"in {req.region}"
        if where:
            sold = f"it is sold as one in {', '.join(where)}: watch there with region={where[0]}"
        else:
            sold = "no region is known to sell it as one"
        return (
            f"AWS does not sell {req.instance_type} as a {kinds} {place}, so there is nothing "
            f"to watch for; {sold}."
        )

    def create(self, made: Made) -> Watch:
        """Store the checked watch and schedule the rounds of the questions nobody asked.
        `WatchError` when the watcher, or everyone, has as many watches as allowed."""
        watch = made.watch.model_copy(update={"id": self.watches.next_watch_id()})
        now = self.clock.now()
        asked = [(q, _round_job(q, watch.id, now)) for q in made.asked]
        end = WATCH_END.job(watch.id, watch.until, WatchJob(watch=watch.id))
        try:
            self.watches.create_watch(watch, asked, end, self.limits)
        except WatchesFull as full:
            raise WatchError(self._full(watch.watcher, full)) from None
        return watch

    def _full(self, user: str, full: WatchesFull) -> str:
        mine = self.live_of(user)
        stop = (
            f"Stop one with `/gpu unwatch {mine[-1].id}` (your oldest; `/gpu watches` lists "
            "them all with Stop), then watch again."
            if mine
            else "Ask again when some have ended."
        )
        if full.per_person:
            return (
                f"you have {full.count} watches watching, the most one person may have "
                f"({self.limits.per_person}). {stop}"
            )
        return (
            f"the bot is watching {full.count} watches for everyone, the most it runs at "
            f"once ({self.limits.total}); {len(mine)} of them are yours. {stop} Its "
            "operators can raise GPU_BOT_WATCHES_TOTAL."
        )

    # --- reading and stopping -------------------------------------------------------

    def listed(self, user: str) -> tuple[list[Watch], bool]:
        """(the watches `user` may see, whether they are everyone's)."""
        if self.is_approver(user):
            return self.watches.watches(), True
        return self.watches.watches(user), False

    def live_of(self, user: str) -> list[Watch]:
        return [w for w in self.watches.watches(user) if w.state is WatchState.WATCHING]

    def get(self, user: str, raw_id: str) -> Watch:
        watch = self.watches.get_watch(normalise_watch_id(raw_id))
        if watch is None or (watch.watcher != user and not self.is_approver(user)):
            raise WatchError(f"There is no watch {raw_id.strip()[:12]} of yours.")
        return watch

    def history(self, watch_id: str) -> list[AuditEntry]:
        return self.watches.watch_audit(watch_id)

    def stop(self, user: str, raw_id: str) -> Watch:
        watch = self.get(user, raw_id)
        if watch.state is not WatchState.WATCHING:
            raise WatchError(f"Watch {watch.id} is {watch.state.value} already.")
        note = STOPPED_BY_WATCHER if user == watch.watcher else stopped_by(user)
        keys = [q.key for q in questions(watch, self.regions(watch))]
        if (
            self.watches.set_state(watch.id, WatchState.STOPPED, note, keys)
            and user != watch.watcher
        ):
            # The watcher is told by the watch's end job, moved to now (sent once, paced
            # and retried as any message).
            self.watches.schedule(
                WATCH_END.job(watch.id, self.clock.now(), WatchJob(watch=watch.id))
            )
        return watch.model_copy(update={"state": WatchState.STOPPED, "ended_note": note})

    def keys(self, watch: Watch) -> list[str]:
        return [q.key for q in questions(watch, self.regions(watch))]


def _round_job(question: Question, activated_by: str, now: datetime) -> Job:
    job_id = f"{WATCH_ROUND.name}:{question.key}:{activated_by}"
    return Job(
        id=job_id,
        kind=WATCH_ROUND.name,
        due=now,
        payload=RoundJob(question=question.key, job=job_id).model_dump(mode="json"),
    )
