"""The rounds of the watches, and what they find.

One round job per question (type, region, count, duration, window): every watch asking
it shares the one AWS call. A fitting offering better than the last sent is recorded
with its message job in one step (the store refuses the same offering twice, so two
workers, or one killed and its job run again, never send it twice). The message job
makes the request with that offering pinned, quoted and ready to submit (or submitted,
with auto=submit), and sends it to the watcher once.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta

from bot.blocks.watches import ended_text, match_blocks, match_text
from bot.domain import events as on
from bot.domain.approval import SpendingPolicy
from bot.domain.audit import BOT, AuditEntry
from bot.domain.choices import candidates
from bot.domain.comparison import OptionKind
from bot.domain.grammar import render_request
from bot.domain.lifecycle import State
from bot.domain.market import Offering, ReservationKind
from bot.domain.outlook import search_of_question
from bot.domain.recommendation import Quote, Recommendation, build_quote
from bot.domain.records import CapacityRecord
from bot.domain.request import Environment
from bot.domain.watch import (
    BETTER_BY,
    STOPPED_BY_WATCHER,
    Seen,
    Sent,
    Watch,
    WatchState,
    best_fit,
    better,
    match_key,
    next_round,
    search_window,
    window_start,
)
from bot.services.changes import Change, RequestChanges
from bot.services.delivery import OnceOnly
from bot.services.jobs import JobRegistry, RetryLater
from bot.services.ports import Clock, Refused, VersionConflict
from bot.services.ports.watches import OfferingSearch, SearchRefused, SearchThrottled
from bot.services.requests import RequestService
from bot.services.submissions import RequestError
from bot.services.watching import (
    WATCH_END,
    WATCH_MATCH,
    WATCH_ROUND,
    MatchJob,
    RoundJob,
    WatchJob,
    WatchService,
)

log = logging.getLogger(__name__)
THROTTLED_WAIT = timedelta(minutes=1)  # at least; the job's retries double it
JOINED_WAIT = timedelta(minutes=5)


class WatchRounds:
    def __init__(
        self,
        service: WatchService,
        search: OfferingSearch,
        changes: RequestChanges,
        requests: RequestService,
        once: OnceOnly,
        clock: Clock,
        limits: SpendingPolicy,
    ) -> None:
        self.service = service
        self.limits = limits
        self.watches = service.watches
        self.quotes = service.quotes
        self.search = search
        self.changes = changes
        self.store = changes.store
        self.requests = requests
        self.once = once
        self.clock = clock

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(WATCH_ROUND, self.run_round)
        jobs.register(WATCH_MATCH, self.deliver)
        jobs.register(WATCH_END, self.run_end)

    # --- a round ------------------------------------------------------------------------

    def run_round(self, job: RoundJob) -> None:
        """Ask the question once for every watch asking it; gives itself back for the
        next round, or ends when no watch asks any more."""
        now = self.clock.now()
        question = self.watches.question(job.question)
        if question is None:
            return
        asking = self.watches.asking(job.question)
        live = [w for w in asking if w.state is WatchState.WATCHING and w.until > now]
        if not live:
            if self.watches.retire_question(job.question, job.job):
                return
            raise RetryLater(now + JOINED_WAIT, "a watch joined the question")
        # At most so many searches a window, whatever the number of questions: a round
        # without a turn now waits for the first window with room (spread, never dropped).
        window = search_window(now)
        turn = self.watches.search_turn(job.job, window, self.service.limits.searches_per_window)
        if turn > window:
            raise RetryLater(window_start(turn), "waiting for its turn to ask AWS")
        try:
            found = self.search.search(question, question.account, now)
        except SearchThrottled as exc:
            raise RetryLater(
                now + THROTTLED_WAIT, f"AWS throttled the search ({exc})", True
            ) from exc
        except SearchRefused as exc:
            self._refused(live, exc)
            if not self.watches.retire_question(job.question, job.job):
                raise RetryLater(now + JOINED_WAIT, "a watch joined the question") from None
            return
        for watch in live:
            self._look(watch, [(question.region, o) for o in found], now)
        if self.quotes.record is not None:
            q = question
            self.quotes.record(
                [
                    search_of_question(
                        q.kind,
                        q.instance_type,
                        q.count,
                        q.duration_hours,
                        q.region,
                        q.earliest,
                        found,
                        now,
                    )
                ]
            )
        due = next_round(live, now)
        assert due is not None  # live is not empty
        raise RetryLater(due, "next round")

    def _look(self, watch: Watch, found: list[tuple[str, Offering]], now: datetime) -> None:
        pick, seen = best_fit(watch, found)
        if seen is not None and _worth_noting(watch.best_seen, seen):
            self.watches.note_seen(watch.id, seen)
        if pick is None or not better(pick[1], watch.sent):
            return
        region, offering = pick
        sent = Sent(
            offering_id=offering.offering_id,
            region=region,
            start=offering.start,
            upfront_usd=offering.upfront_usd,
        )
        payload = MatchJob(watch=watch.id, offering=offering.model_dump(mode="json"), region=region)
        job = WATCH_MATCH.job(f"{watch.id}:{_digest(offering.offering_id)}", now, payload)
        audit = AuditEntry(
            request_id=watch.id,
            actor=BOT,
            action="match sent",
            from_state=WatchState.WATCHING.value,
            to_state=WatchState.WATCHING.value,
            at=now,
            usd=offering.upfront_usd,
            detail=f"{offering.kind.label} {offering.offering_id} in {region} "
            f"from {offering.start:%Y-%m-%d %H:%M}Z",
        )
        if self.watches.record_match(watch.id, sent, BETTER_BY, job, audit):
            log.info("watch %s: match %s recorded", watch.id, offering.offering_id)

    def _refused(self, live: list[Watch], exc: SearchRefused) -> None:
        """A describe limit: said once to each watcher (their watch ends), not retried."""
        note = (
            f"AWS refused the search for this account ({exc.code}): the account's Capacity "
            "Block describe limit or quota is reached; ask AWS to raise it, then watch again"
        )
        for watch in live:
            self.end(watch, note)

    # --- the end of a watch -------------------------------------------------------------

    def run_end(self, job: WatchJob) -> None:
        watch = self.watches.get_watch(job.watch)
        if watch is None:
            return
        if watch.state is WatchState.WATCHING:
            self.end(watch, "its date came")
        elif watch.state is WatchState.ENDED:
            self._tell_end(watch)  # the first run ended it and may not have told
        elif watch.state is WatchState.STOPPED and watch.ended_note != STOPPED_BY_WATCHER:
            self._tell_end(watch)  # stopped by an approver: the watcher hears who

    def end(self, watch: Watch, note: str) -> None:
        self.watches.set_state(watch.id, WatchState.ENDED, note, self.service.keys(watch))
        current = self.watches.get_watch(watch.id)
        if current is not None and current.state is WatchState.ENDED:
            self._tell_end(current)

    def _tell_end(self, watch: Watch) -> None:
        try:
            self.once.send(f"watch-end:{watch.id}", watch.watcher, ended_text(watch), [])
        except Refused as refused:
            if refused.lasting:
                log.error("could not tell %s that %s ended: %s", watch.watcher, watch.id, refused)
                return
            raise

    # --- a match ------------------------------------------------------------------------

    def deliver(self, job: MatchJob) -> None:
        """Make the request (offering pinned), submit it with auto=submit, and send the
        watcher the comparison once."""
        watch = self.watches.get_watch(job.watch)
        if watch is None:
            return
        offering = Offering.model_validate(job.offering)
        if watch.sent and watch.sent[-1].offering_id != offering.offering_id:
            # A better match was recorded since: it is the one sent; this one is not.
            log.info("watch %s: match %s superseded", watch.id, offering.offering_id)
            return
        record = self._pinned_record(watch, offering, job.region)
        problem = None
        if watch.auto_submit and record.state is State.QUOTED:
            record, problem = self._submit(watch, record, offering)
        withdrawn = self._withdraw_earlier(watch, record)
        key = f"watch-match:{watch.id}:{_digest(offering.offering_id)}"
        blocks = match_blocks(watch, record, offering, self.limits, problem, withdrawn)
        try:
            self.once.send(key, watch.watcher, match_text(watch, offering), blocks)
        except Refused as refused:
            if not refused.lasting:
                raise
            log.error("could not tell %s of a match for %s: %s", watch.watcher, watch.id, refused)

    def _withdraw_earlier(self, watch: Watch, better: CapacityRecord) -> list[str]:
        """The earlier matches' requests this better one replaces, cancelled: one still
        quoted, or one waiting for approvers once this one waits too (never two pending
        requests for one need). The ids withdrawn."""
        withdrawn = []
        for sent in watch.sent[:-1]:
            record = self.store.get(self.store.id_for(match_key(watch.id, sent.offering_id)))
            if record is None or record.id == better.id:
                continue
            replaceable = record.state is State.QUOTED or (
                record.state is State.PENDING_APPROVAL and better.state is State.PENDING_APPROVAL
            )
            if not replaceable:
                continue
            try:
                self.requests.cancel(record.id, watch.watcher)
            except RequestError as exc:
                log.info("watch %s: %s not withdrawn: %s", watch.id, record.id, exc)
                continue
            withdrawn.append(record.id)
        return withdrawn

    def _submit(
        self, watch: Watch, record: CapacityRecord, offering: Offering
    ) -> tuple[CapacityRecord, str | None]:
        assert record.quote is not None
        pick = pinned_pick(record.quote, offering)
        if pick is None:
            return record, "the offering it found is not one the comparison lets be submitted"
        try:
            return self.requests.submit(record.id, watch.watcher, pick, watch.request.reason), None
        except RequestError as exc:
            return record, str(exc)

    def _pinned_record(self, watch: Watch, offering: Offering, region: str) -> CapacityRecord:
        """The request for the offering (made once per watch and offering): quoted, the
        offering the only one of its kind in the comparison, and recommended."""
        request_id = self.store.id_for(match_key(watch.id, offering.offering_id))
        existing = self.store.get(request_id)
        if existing is not None:
            return existing
        now = self.clock.now()
        quote = self.pinned_quote(watch, offering, region, now)
        record = CapacityRecord(
            id=request_id,
            state=State.QUOTED,
            requester=watch.watcher,
            created_at=now,
            updated_at=now,
            request=quote.request,
            text=render_request(quote.request.draft()),
            quote=quote,
            reason=watch.request.reason,
        )
        detail = f"found by watch {watch.id}: {offering.offering_id}"
        try:
            return self.changes.create(
                Change(record, on.FoundByWatch(), "created", watch.watcher, detail)
            )
        except VersionConflict:
            again = self.store.get(request_id)
            assert again is not None
            return again

    def pinned_quote(self, watch: Watch, offering: Offering, region: str, now: datetime) -> Quote:
        block = offering.kind is ReservationKind.CAPACITY_BLOCK
        request = watch.request.model_copy(
            update={
                "start": offering.start,
                "region": region,
                "environment": Environment.EC2 if block else Environment.SAGEMAKER,
            }
        )
        snapshot = self.quotes.market.snapshot(request, now)
        other = "training-plan" if block else "capacity-block"
        pinned = snapshot.model_copy(
            update={
                "capacity_blocks": (offering,) if block else (),
                "training_plans": () if block else (offering,),
                "errors": {**snapshot.errors, other: f"watch {watch.id} found another kind"},
            }
        )
        quote = build_quote(request, pinned, self.quotes.catalog, now, self.quotes.cap)
        kind = OptionKind(offering.kind.value)
        option = quote.option(kind)
        if not option.eligible:
            return quote
        reasons = [f"found by watch {watch.id}: the offering it watched for", *option.reasons]
        warnings = quote.recommendation.warnings
        return quote.model_copy(
            update={"recommendation": Recommendation(kind=kind, reasons=reasons, warnings=warnings)}
        )


def pinned_pick(quote: Quote, offering: Offering) -> str | None:
    """The submit form's value for the offering in its pinned quote."""
    for candidate in candidates(quote):
        if (
            candidate.offering is not None
            and candidate.offering.offering_id == offering.offering_id
        ):
            return candidate.value
    return None


def _worth_noting(old: Seen | None, new: Seen) -> bool:
    if old is None or old == new:
        return old is None
    if not new.why_not:
        return True
    return bool(old.why_not) and new.upfront_usd < old.upfront_usd


def _digest(offering_id: str) -> str:
    return hashlib.sha256(offering_id.encode()).hexdigest()[:12]
