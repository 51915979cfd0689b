"""Buying what was approved, exactly once, and following it to its end.

The purchase job wins `approved -> purchasing` by compare-and-set and records the attempt
(when, which offering, which account, its lease) before any AWS call, and marks it sent
just before the purchase call. Just before buying it asks AWS whether it already holds
the request's purchase (by tag or plan name): Redis keeps about the last second of
writes at risk (AOF fsync every second), so an attempt record lost in a power cut must
not become a second purchase. A purchase whose outcome is not certain (no answer, a 5xx,
an answer to a re-send) is reconciled, never bought again: found, it goes on; not found,
it is `purchase_unknown`, looked for again a few times, and a person decides. A request
found in `purchasing` whose attempt outlived its lease is reconciled the same way when
its call was (or may have been) sent; an attempt surely never sent (the store failed or
the worker died before the call) bought nothing and is tried anew. Following what was
bought to its end is bot/services/tracking.py; what each change causes (people told,
tracking) is in bot/services/reactions.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.domain import purchase_steps as steps
from bot.domain.audit import BOT
from bot.domain.buy_once import Stage, Step, look_again_at, next_step
from bot.domain.catalog import UnknownInstanceType
from bot.domain.comparison import OptionKind
from bot.domain.future_reservation import reserves_ahead
from bot.domain.lifecycle import State
from bot.domain.purchase import block_limit_refusal, offering_moved, purchase_tags
from bot.domain.purchase_steps import MARKED_FAILED
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, PurchaseAttempt, Reservation
from bot.services.actor import Actor, NotAllowed
from bot.services.changes import Change, RequestChanges
from bot.services.jobs import RetryLater
from bot.services.ports import Clock, Order, PurchaseError, PurchaseProblem, Purchaser
from bot.services.quoting import QuoteService
from bot.services.tracking import FIRST_POLL as FIRST_POLL  # reactions.py reads it here
from bot.services.tracking import ReservationTracker

log = logging.getLogger(__name__)

# An On-Demand Capacity Reservation is created this long before its window opens.
RESERVATION_LEAD = timedelta(minutes=10)
THROTTLE_RETRIES = 5
# Refusals that leave nothing bought and are worth another try on the same approval.
TRY_AGAIN = frozenset({PurchaseProblem.THROTTLED, PurchaseProblem.UNAVAILABLE})
NOTHING_TO_BUY = frozenset({OptionKind.ON_DEMAND, OptionKind.SPOT})
# Problems after which a new approval may succeed: the requester gets a fresh quote.
REQUOTE = frozenset(
    {
        PurchaseProblem.INSUFFICIENT_CAPACITY,
        PurchaseProblem.OFFERING_GONE,
        PurchaseProblem.INSTANCE_LIMIT,
        PurchaseProblem.THROTTLED,
        PurchaseProblem.ACCESS_DENIED,
        PurchaseProblem.NAME_TAKEN,
    }
)


class PurchaseService:
    def __init__(
        self,
        changes: RequestChanges,
        purchaser: Purchaser,
        quotes: QuoteService,
        clock: Clock,
        namespace: str,
        default_account: str,
        block_regions: Sequence[str] = (),
    ) -> None:
        """`block_regions`: every region the bot may buy Capacity Blocks in; the
        organisation's 256-instance limit is counted across all of them."""
        self.changes = changes
        self.store = changes.store
        self.purchaser = purchaser
        self.quotes = quotes
        self.clock = clock
        self.namespace = namespace
        self.default_account = default_account
        self.block_regions = tuple(block_regions)
        self.tracker = ReservationTracker(changes, purchaser, clock)

    # --- the purchase job --------------------------------------------------------------

    def run_purchase(self, request_id: str) -> CapacityRecord | None:
        record = self.store.get(request_id)
        if record is None or record.choice is None:
            return record
        now = self.clock.now()
        attempt = record.attempt
        step = next_step(_stage(record), attempt.lease_until if attempt else None, now)
        if step.step is Step.CLAIM:
            if record.choice.kind in NOTHING_TO_BUY:
                return self._schedule_window(record)
            ahead = False
            if record.choice.kind is OptionKind.ON_DEMAND_RESERVATION:
                ahead = self._reserves_ahead(record, now)
                opens = record.request.start - RESERVATION_LEAD
                if now < opens and not ahead:
                    raise RetryLater(
                        opens, "an On-Demand Capacity Reservation starts with its window"
                    )
            won = self._begin_attempt(record, ahead)
            return self._buy(won) if won is not None else self.store.get(request_id)
        if step.step is Step.WAIT:
            assert step.until is not None
            raise RetryLater(step.until, "another worker is buying")
        if step.step is Step.RECONCILE:
            return self.reconcile(record)
        if step.step is Step.LOOK_AGAIN:
            return self._look_again(record, now)
        return record  # decided, bought or failed already: nothing to do

    def _look_again(self, record: CapacityRecord, now: datetime) -> CapacityRecord | None:
        """An unknown outcome, looked for again (never bought): AWS may show it late."""
        assert record.attempt is not None
        saved = self.reconcile(record)
        if saved is None or saved.state is not State.PURCHASE_UNKNOWN:
            return saved
        again = look_again_at(record.attempt.at, now)
        if again is None:
            return saved  # a person decides (Check again / Mark failed)
        raise RetryLater(again, "purchase outcome unknown: looking in AWS again")

    def _schedule_window(self, record: CapacityRecord) -> CapacityRecord | None:
        why = "nothing to buy: runs in its window"
        saved, _ = self.changes.apply(
            record.id,
            lambda r: Change.of(steps.window_scheduled(r, self.clock.now()), "scheduled", BOT, why),
        )
        return saved

    def _reserves_ahead(self, record: CapacityRecord, now: datetime) -> bool:
        """An ODCR AWS would take as a future-dated Capacity Reservation is asked now."""
        request = record.request
        try:
            vcpus = self.quotes.catalog.instance(request.instance_type).vcpus
        except UnknownInstanceType:
            vcpus = None
        return reserves_ahead(request.instance_type, vcpus, request.count, request.start, now)

    def _begin_attempt(self, record: CapacityRecord, ahead: bool = False) -> CapacityRecord | None:
        """Win approved -> purchasing (or a new attempt after a refused one) and record
        the attempt; None when someone else won."""
        assert record.choice is not None
        seen_state, seen_attempts = record.state, len(record.attempts)

        def begin(r: CapacityRecord) -> Change | None:
            step = steps.attempt_started(
                r,
                seen_state,
                seen_attempts,
                self.namespace,
                self.default_account,
                self.clock.now(),
                start_ahead=ahead,
            )
            if step is None:
                return None
            attempt = step.record.attempts[-1]
            detail = (
                f"attempt {len(step.record.attempts)}: {attempt.kind.value} "
                f"{attempt.offering_id or ''} in {attempt.account}"
            )
            return Change.of(step, "purchasing", BOT, detail.replace("  ", " "))

        saved, change = self.changes.apply(record.id, begin)
        return saved if change is not None else None

    def _order(self, record: CapacityRecord, fee: float | None = None) -> Order:
        attempt = record.attempt
        assert attempt is not None
        offering = record.chosen_offering
        request = record.request
        return Order(
            kind=attempt.kind,
            account=attempt.account,
            region=attempt.region,
            instance_type=offering.instance_type if offering else request.instance_type,
            count=offering.count if offering else request.count,
            start=offering.start if offering else request.start,
            end=offering.end if offering else request.end,
            offering_id=attempt.offering_id,
            token=attempt.token,
            tags=purchase_tags(self.namespace, record.id, record.requester, record.approvers),
            fee_usd=fee,
            start_ahead=attempt.start_ahead,
        )

    def _buy(self, record: CapacityRecord) -> CapacityRecord | None:
        attempt = claimed = record.attempt
        assert attempt is not None and claimed is not None
        fee: float | None = None
        try:
            # Look before you buy: AWS may hold this request's purchase already (an
            # attempt record lost with Redis's last second, a purchase made elsewhere).
            found = self.purchaser.find(self._order(record))
            if found is not None:
                log.warning("%s: AWS already holds its purchase; not buying", record.id)
                return self._record(record.id, found, "found before buying")
            offering = record.chosen_offering
            if offering is not None:
                if attempt.kind is OptionKind.CAPACITY_BLOCK:
                    regions = self._regions(record)
                    refusal = block_limit_refusal(
                        offering.count, self.purchaser.blocks_in_use(regions), regions
                    )
                    if refusal is not None:
                        return self._requote(record, refusal[0].upper() + refusal[1:])
                current = self.purchaser.current_offering(attempt.account, record.request, offering)
                moved = offering_moved(offering, attempt.approved_usd, current)
                if moved is not None:
                    return self._requote(record, moved[0].upper() + moved[1:])
                assert current is not None
                fee = current.upfront_usd
                if current.offering_id != offering.offering_id:
                    # Same capacity, no dearer, under a new id: buy it (the id is what AWS sells).
                    attempt = attempt.model_copy(update={"offering_id": current.offering_id})
                    record = record.model_copy(
                        update={"attempts": (*record.attempts[:-1], attempt)}
                    )
            order = self._order(record, fee)
            self.purchaser.dry_run(order)
        except PurchaseError as error:
            return self._refused(record, error)
        # A store that fails here leaves the attempt unsent: tried anew, never reconciled.
        sent = self._mark_sent(claimed, record)
        if sent is None:
            log.warning("%s: a newer attempt or a person took over; not buying", record.id)
            return self.store.get(record.id)
        try:
            reservation = self.purchaser.buy(order)
        except PurchaseError as error:
            return self._refused(sent, error)
        return self._record(record.id, reservation, "purchased")

    def _mark_sent(self, claimed: PurchaseAttempt, record: CapacityRecord) -> CapacityRecord | None:
        """Write that the purchase call of `claimed` (as stored; `record` carries the
        offering id it buys) goes out now; None when the attempt is no longer the latest."""
        attempt = record.attempt
        assert attempt is not None
        detail = f"attempt {len(record.attempts)}: the purchase call goes to AWS"

        def sending(r: CapacityRecord) -> Change | None:
            step = steps.attempt_sent(r, claimed, attempt.offering_id, self.clock.now())
            return Change.of(step, "sending", BOT, detail)

        saved, change = self.changes.apply(record.id, sending)
        return saved if change is not None else None

    def _regions(self, record: CapacityRecord) -> list[str]:
        """Where Capacity Blocks are counted: the request's region and every region the
        bot buys them in (AWS counts the limit across regions, not per region)."""
        return list(dict.fromkeys([record.request.region, *self.block_regions]))

    # --- outcomes ------------------------------------------------------------------------

    def _record(
        self, request_id: str, reservation: Reservation, action: str
    ) -> CapacityRecord | None:
        """Keep what AWS returned and move to the state AWS reports."""
        reservation = reservation.model_copy(update={"checked_at": self.clock.now()})
        detail = (
            f"{reservation.kind.value} {reservation.id} in {reservation.account} "
            f"({reservation.state})"
        )

        def recorded(r: CapacityRecord) -> Change | None:
            step = steps.bought(r, reservation, self.clock.now())
            return Change.of(step, action, BOT, detail, usd=reservation.fee_usd)

        saved, _ = self.changes.apply(request_id, recorded)
        return saved

    def _refused(self, record: CapacityRecord, error: PurchaseError) -> CapacityRecord | None:
        if error.problem is PurchaseProblem.OUTCOME_UNKNOWN:
            log.warning("%s: purchase outcome unknown (%s): reconciling", record.id, error)
            return self.reconcile(record, force=True, why=str(error))
        if error.problem in TRY_AGAIN:
            tried = sum(1 for a in record.attempts if a.refused in TRY_AGAIN)
            if tried + 1 < THROTTLE_RETRIES:
                return self._retry_later(record, error, tried + 1)
        text = describe_problem(error)
        if error.problem in REQUOTE:
            return self._requote(record, text)
        return self._fail(record, text)

    def _retry_later(
        self, record: CapacityRecord, error: PurchaseError, times: int
    ) -> CapacityRecord | None:
        """Nothing was bought (AWS throttled, or could not be asked): mark the attempt
        refused and try again later."""
        attempt = record.attempt
        assert attempt is not None
        what = (
            "AWS throttled the purchase"
            if error.problem is PurchaseProblem.THROTTLED
            else (f"AWS could not be asked ({error.code})")
        )
        problem = error.problem.value
        self.changes.apply(
            record.id,
            lambda r: Change.of(
                steps.attempt_refused(r, attempt, problem), problem, BOT, f"{what} ({times})"
            ),
        )
        delay = timedelta(seconds=30 * 2 ** (times - 1))
        raise RetryLater(self.clock.now() + delay, what)

    def _requote(self, record: CapacityRecord, why: str) -> CapacityRecord | None:
        """Buy nothing; quote again and ask the requester to submit anew (a new approval)."""
        quote: Quote | None
        try:
            quote = self.quotes.quote(record.request)
        except Exception:
            log.exception("%s: quoting again failed", record.id)
            quote = record.quote

        saved, _ = self.changes.apply(
            record.id,
            lambda r: Change.of(
                steps.requoted(r, quote, why, self.clock.now()), "re-quoted", BOT, why
            ),
        )
        return saved

    def _fail(self, record: CapacityRecord, why: str) -> CapacityRecord | None:
        saved, _ = self.changes.apply(
            record.id,
            lambda r: Change.of(
                steps.purchase_failed(r, why, self.clock.now()), "failed", BOT, why
            ),
        )
        return saved

    # --- crash safety ----------------------------------------------------------------------

    def reconcile(
        self, record: CapacityRecord, force: bool = False, why: str = ""
    ) -> CapacityRecord | None:
        """Look in AWS for what the latest attempt bought; never buy."""
        attempt = record.attempt
        assert attempt is not None
        if (attempt.refused or attempt.never_sent) and record.state is State.PURCHASING:
            # AWS refused that attempt for sure, or its call never left: a new one is safe.
            won = self._begin_attempt(record)
            return self._buy(won) if won is not None else self.store.get(record.id)
        try:
            found = self.purchaser.find(self._order(record))
        except PurchaseError as error:
            raise RetryLater(self.clock.now() + FIRST_POLL, f"reconcile failed: {error}") from error
        if found is not None:
            return self._record(record.id, found, "reconciled")
        if record.state is State.PURCHASE_UNKNOWN:
            return record

        def unknown(r: CapacityRecord) -> Change | None:
            step = steps.outcome_unknown(r, attempt, self.clock.now())
            if step is None:
                return None
            said = step.record.failure or ""
            return Change.of(step, "purchase unknown", BOT, f"{why}: {said}" if why else said)

        saved, _ = self.changes.apply(record.id, unknown)
        return saved

    def check_again(self, request_id: str, actor: Actor) -> CapacityRecord | None:
        """The Check again button (approvers only): look in AWS once more (never
        buys). Raises NotAllowed for anyone else."""
        if not actor.is_approver:
            raise NotAllowed("Only approvers can check a purchase.")
        record = self.store.get(request_id)
        if record is None or record.state is not State.PURCHASE_UNKNOWN:
            return record
        return self.reconcile(record)

    def mark_failed(self, request_id: str, actor: Actor) -> CapacityRecord | None:
        """Mark failed (approvers only): a person's word that nothing was bought; the bot
        never buys it again. Raises NotAllowed for anyone else."""
        if not actor.is_approver:
            raise NotAllowed("Only approvers can mark a purchase failed.")
        saved, _ = self.changes.apply(
            request_id,
            lambda r: Change.of(
                steps.marked_failed(r, self.clock.now()), "marked failed", actor.user, MARKED_FAILED
            ),
        )
        return saved

    # --- tracking ----------------------------------------------------------------------------

    def run_track(self, request_id: str) -> CapacityRecord | None:
        """The track job: follow the request's reservation (bot/services/tracking.py)."""
        return self.tracker.run_track(request_id)

    # --- the organisation's limit, for quotes and operators ------------------------------------

    def blocks_in_use(self, regions: Sequence[str]) -> int:
        from bot.domain.purchase import blocks_in_use

        return sum(b.instances for b in blocks_in_use(self.purchaser.blocks_in_use(regions)))


def describe_problem(error: PurchaseError) -> str:
    """What went wrong, for the requester and the card: AWS's reason and what to do."""
    aws = f"AWS said {error.code}: {error.message}".strip()
    if error.problem is PurchaseProblem.ACCESS_DENIED:
        return (
            f"the bot may not call {error.action or 'the purchase API'} in this account: grant "
            f"it (see deploy/iam-purchase-policy.json), then submit again. {aws}"
        )
    if error.problem is PurchaseProblem.INSUFFICIENT_CAPACITY:
        return f"AWS has no capacity for this offering now; pick another offering. {aws}"
    if error.problem is PurchaseProblem.OFFERING_GONE:
        return f"the offering is gone; pick another one. {aws}"
    if error.problem is PurchaseProblem.INSTANCE_LIMIT:
        return (
            "the account's instance limit would be passed; ask for fewer instances or raise "
            f"the quota. {aws}"
        )
    if error.problem is PurchaseProblem.THROTTLED:
        return f"AWS kept throttling the purchase; submit again in a few minutes. {aws}"
    if error.problem is PurchaseProblem.NAME_TAKEN:
        return f"{error.message}; submit again to buy under a new name"
    return aws


def _stage(record: CapacityRecord) -> Stage:
    """Where the request's purchase is in the buy-once protocol."""
    if record.state is State.APPROVED:
        return Stage.APPROVED
    if record.attempt is not None and record.state is State.PURCHASING:
        return Stage.BUYING
    if record.attempt is not None and record.state is State.PURCHASE_UNKNOWN:
        return Stage.UNKNOWN
    return Stage.SETTLED
