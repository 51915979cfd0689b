"""The quote jobs: compare a stored draft (draft -> quoted, or failed) and show the result,
or compare a request that is not stored (`/gpu quote`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.blocks.text import esc
from bot.domain.lifecycle import State
from bot.domain.outlook import Search
from bot.domain.recommendation import Quote, most_usd
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest
from bot.domain.transitions import quote_failed, quoted
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.jobs import OpenJob, QuoteJob, QuoteOnlyJob
from bot.services.ports import Clock, Notifier
from bot.services.quoting import QuoteService
from bot.services.spending import SpendLedger

log = logging.getLogger(__name__)


class QuoteJobs:
    def __init__(
        self,
        changes: RequestChanges,
        quotes: QuoteService,
        notifier: Notifier,
        clock: Clock,
        ledger: SpendLedger | None = None,
        outlook_note: Callable[[Quote], str | None] | None = None,
    ) -> None:
        """`outlook_note`: the capacity outlook's line for a quote (None: no line)."""
        self.outlook_note = outlook_note
        self.ledger = ledger or SpendLedger(changes.store, now=changes.now)
        self.changes = changes
        self.store = changes.store
        self.quotes = quotes
        self.notifier = notifier
        self.clock = clock

    def run_quote_only(self, job: QuoteOnlyJob) -> None:
        """The `quote-only` job. What its searches saw is recorded after it is shown."""
        if self.refused_unsold(job):
            return
        team = self.ledger.team_of(job.user, job.channel)
        seen: list[Search] = []
        quote = self._quote(job.request, team, seen)
        self.notifier.show_quote(job.user, job.response_url or None, quote)
        self._record(seen)

    def unless_unsold(
        self, create: Callable[[OpenJob], CapacityRecord | None]
    ) -> Callable[[OpenJob], CapacityRecord | None]:
        """The open job: `create` the draft, unless the type is refused as not sold."""
        return lambda job: None if self.refused_unsold(job) else create(job)

    def refused_unsold(self, job: OpenJob | QuoteOnlyJob) -> bool:
        """Before a draft is stored: a type no region asked for sells is refused where
        it was asked, naming the regions that sell it (nothing stored, nothing quoted)."""
        refusal = self.quotes.unsold(job.request)
        if refusal is None:
            return False
        wrong, where = refusal
        text = f":warning: {esc(wrong)}; {esc(where)}. Nothing was quoted or stored."
        self.notifier.reply(job.user, job.response_url or None, text)
        return True

    def run_quote(self, job: QuoteJob) -> CapacityRecord | None:
        """The quote job: quote a draft, then show the result. Safe to run twice: a
        second run finds the request quoted and shows the same comparison again (Slack
        replaces the message at a response_url)."""
        record = self.store.get(job.request)
        if record is None:
            return None
        seen: list[Search] = []
        if record.state is State.DRAFT:
            record = self.quote(record, seen)
        if record.state in (State.QUOTED, State.FAILED):
            self.notifier.quote_ready(record, job.response_url or None)
        self._record(seen)
        return record

    def _record(self, seen: list[Search]) -> None:
        if seen and self.quotes.record is not None:
            self.quotes.record(seen)

    def quote(self, record: CapacityRecord, seen: list[Search] | None = None) -> CapacityRecord:
        """draft -> quoted with the comparison, or -> failed with what went wrong."""
        try:
            quote = self._quote(record.request, record.team_name, seen)
        except Exception as exc:
            log.exception("quoting %s failed", record.id)
            failure = f"quoting failed: {exc}"

            def fail(r: CapacityRecord) -> Change | None:
                return Change.of(quote_failed(r, failure), "failed", BOT, failure)

            saved, _ = self.changes.apply(record.id, fail)
            assert saved is not None
            return saved

        kind = quote.recommendation.kind
        recommended = f"recommended {kind.value if kind else 'nothing'}"

        def done(r: CapacityRecord) -> Change | None:
            return Change.of(quoted(r, quote, self.clock.now()), "quoted", BOT, recommended)

        saved, _ = self.changes.apply(record.id, done)
        assert saved is not None
        return saved

    def _quote(self, request: CapacityRequest, team: str, seen: list[Search] | None) -> Quote:
        """The comparison, at the team's measured utilisation when the request gave no
        `util=` (the quote says so)."""
        asked, learned = self.ledger.with_learned_util(request, team)
        quote = self.quotes.quote(asked, seen)
        if learned:
            quote = quote.model_copy(update={"learned": learned})
        kind = quote.recommendation.kind
        if kind is not None:
            most = most_usd(quote.option(kind))
            budget = self.ledger.quote_check(team, request.start, most)
            quote = quote.model_copy(update={"budget": budget}) if budget else quote
        note = self.outlook_note(quote) if self.outlook_note else None
        return quote.model_copy(update={"outlook_note": note}) if note else quote
