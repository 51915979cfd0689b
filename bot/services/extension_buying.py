"""Buying an approved extension exactly once, by the buy-once protocol of purchases.

The buy job claims it (approved -> purchasing, exactly one wins) with an attempt and a
lease; just before buying AWS is asked where the reservation ends (an extension already
applied is not bought again), and the offer is looked up again (refused if its price rose
or its window moved). The purchase call is sent once; an outcome that is not certain is
reconciled by AWS's extension history and where AWS says the reservation ends: found,
it is bought; not found, it is `purchase_unknown`, looked for again, never bought again.

AWS answers a purchase with its payment `payment-pending` (a training plan's
`PaymentStatus: Pending`): the extension is then followed by the same job until AWS says
paid (the new end and its fee count from then) or failed (the old end stands, nothing is
paid, and the requester and the approvers are told). EC2 User Guide, "Extend Capacity
Blocks", Billing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from bot.blocks.text import usd, when
from bot.domain import extension_steps as steps
from bot.domain.buy_once import Stage, Step, first_look, look_again_at, next_step
from bot.domain.extension import Extension, ExtensionPayment, ExtensionStatus, price_moved
from bot.domain.records import CapacityRecord, Reservation
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.jobs import RetryLater
from bot.services.ports import (
    Clock,
    ExtensionMarket,
    ExtensionUnavailable,
    PurchaseError,
    PurchaseProblem,
)

log = logging.getLogger(__name__)
# How often a payment-pending extension is looked at: AWS settles it within 12 hours.
PAYMENT_LOOK = timedelta(minutes=5)


class ExtensionBuyer:
    """The buy job of `ExtensionService` (which owns one and answers `buy`)."""

    def __init__(self, changes: RequestChanges, market: ExtensionMarket, clock: Clock) -> None:
        self.changes = changes
        self.store = changes.store
        self.market = market
        self.clock = clock

    def buy(self, request_id: str, number: int) -> None:
        """Buy extension `number` of the request, exactly once."""
        record = self.store.get(request_id)
        ext = record.extension if record else None
        if record is None or ext is None or ext.number != number:
            return
        now = self.clock.now()
        step = next_step(_stage(ext), ext.lease_until, now)
        if step.step is Step.WAIT:
            assert step.until is not None
            raise RetryLater(step.until, "another worker is buying the extension")
        if step.step is Step.RECONCILE:
            self._reconcile(record, ext, "its purchase attempt outlived its lease")
            return
        if step.step is Step.LOOK_AGAIN:
            self._look_again(record, ext, now)
            return
        if ext.status is ExtensionStatus.PAYMENT_PENDING:
            self._follow_payment(record, ext, now)
            return
        if step.step is Step.NOTHING:
            return  # bought, failed or rejected already
        claimed = self._claim(record, ext)
        if claimed is None:
            return  # another job won the claim
        record = claimed
        res = record.reservation
        assert res is not None and record.extension is not None
        ext = record.extension
        try:
            # Look before you buy: an extension AWS already has is not bought again.
            found = self._aws_says(res, ext)
            if found is not None:
                self._settle_payment(record, ext, found, "found")
                return
            current = self.market.extension_offer(res, ext.offer.hours)
        except ExtensionUnavailable as exc:
            self._fail(record, ext, f"{exc}; ask again")
            return
        except PurchaseError as exc:
            self._fail(record, ext, f"AWS could not be asked before buying ({exc}); ask again")
            return
        if current is None or price_moved(ext.offer, current):
            now_price = usd(current.fee_usd) if current else "no offer"
            approved = usd(ext.offer.fee_usd)
            why = f"the price moved ({approved} approved, {now_price} now): ask again"
            self._fail(record, ext, why)
            return
        try:
            payment = self.market.buy_extension(res, current)
        except PurchaseError as exc:
            if exc.problem is PurchaseProblem.OUTCOME_UNKNOWN:
                log.warning("%s: extension outcome unknown (%s): reconciling", record.id, exc)
                self._reconcile(record, ext, str(exc))
            else:
                self._fail(record, ext, f"AWS refused: {exc.code}: {exc.message}")
            return
        self._settle_payment(record, ext, payment, "bought")

    def _settle_payment(
        self, record: CapacityRecord, ext: Extension, payment: ExtensionPayment, how: str
    ) -> None:
        """What AWS says of the payment decides: paid moves the end, pending is followed,
        failed leaves the old end."""
        res = record.reservation
        assert res is not None
        if payment is ExtensionPayment.PAID:
            self._finish(record, ext, _with_extension(res, ext), how)
        elif payment is ExtensionPayment.PENDING:
            if ext.status is not ExtensionStatus.PAYMENT_PENDING:
                self._payment_pending(record, ext)
        else:
            self._payment_failed(record, ext)

    def _follow_payment(self, record: CapacityRecord, ext: Extension, now: datetime) -> None:
        res = record.reservation
        assert res is not None
        try:
            payment = self.market.extension_payment(res, ext.offer)
        except PurchaseError as exc:
            raise RetryLater(now + PAYMENT_LOOK, f"extension payment look failed: {exc}") from exc
        if payment is None or payment is ExtensionPayment.PENDING:
            raise RetryLater(now + PAYMENT_LOOK, "AWS is still processing the extension's payment")
        self._settle_payment(record, ext, payment, "paid")

    def _payment_pending(self, record: CapacityRecord, ext: Extension) -> None:
        detail = f"AWS is processing the payment of {usd(ext.offer.fee_usd)}"

        def pending(r: CapacityRecord) -> Change | None:
            step = steps.payment_pending(r, ext.number)
            return Change.of(step, "extension-payment-pending", BOT, detail)

        self.changes.apply(record.id, pending)

    def _payment_failed(self, record: CapacityRecord, ext: Extension) -> None:
        def failed(r: CapacityRecord) -> Change | None:
            step = steps.payment_failed(r, ext.number)
            return Change.of(step, "extension-payment-failed", BOT, steps.PAYMENT_FAILED)

        self.changes.apply(record.id, failed)

    def _reconcile(self, record: CapacityRecord, ext: Extension, why: str) -> None:
        """Where AWS says the reservation ends decides; nothing is bought."""
        res = record.reservation
        assert res is not None
        try:
            payment = self._aws_says(res, ext)
        except PurchaseError as exc:
            raise RetryLater(first_look(self.clock.now()), f"reconcile failed: {exc}") from exc
        if payment is not None:
            self._settle_payment(record, ext, payment, "found")
        elif ext.status is not ExtensionStatus.UNKNOWN:
            self._unknown(record, ext, why)

    def _aws_says(self, res: Reservation, ext: Extension) -> ExtensionPayment | None:
        """The extension as AWS has it: its payment in the history, or paid when the
        reservation already ends at the new end (the history can lag); None: not bought."""
        payment = self.market.extension_payment(res, ext.offer)
        if payment is None and self.market.current_end(res) >= ext.offer.end:
            return ExtensionPayment.PAID
        return payment

    def look_once(self, record: CapacityRecord, ext: Extension) -> None:
        """A person's Check again: where AWS says the reservation ends, once; never buys."""
        self._reconcile(record, ext, "")

    def _look_again(self, record: CapacityRecord, ext: Extension, now: datetime) -> None:
        self.look_once(record, ext)
        fresh = self.store.get(record.id)
        left = fresh.extension if fresh else None
        if left is None or left.number != ext.number or left.status is not ExtensionStatus.UNKNOWN:
            return
        again = look_again_at(ext.attempt_at or now, now)
        if again is not None:
            raise RetryLater(again, "extension outcome unknown: looking in AWS again")

    def _claim(self, record: CapacityRecord, ext: Extension) -> CapacityRecord | None:
        """approved -> purchasing, with the attempt and its lease: exactly one caller wins."""
        now = self.clock.now()
        what = ext.offer.offering_id[:80]

        def claim(r: CapacityRecord) -> Change | None:
            step = steps.purchase_started(r, ext.number, now)
            return Change.of(step, "extension-purchasing", BOT, what)

        saved, change = self.changes.apply(record.id, claim)
        return saved if change is not None else None

    def _finish(self, record: CapacityRecord, ext: Extension, res: Reservation, how: str) -> None:
        fee = ext.offer.fee_usd
        detail = f"{how}: ends {when(res.end)}, {usd(fee)}"

        def done(r: CapacityRecord) -> Change | None:
            step = steps.bought(r, ext.number, res)
            return Change.of(step, "extension-bought", BOT, detail, usd=fee)

        self.changes.apply(record.id, done)

    def _unknown(self, record: CapacityRecord, ext: Extension, why: str) -> None:
        said = steps.UNKNOWN_SAID
        detail = f"{why}: {said}" if why else said

        def unknown(r: CapacityRecord) -> Change | None:
            return Change.of(steps.outcome_unknown(r, ext.number), "extension-unknown", BOT, detail)

        self.changes.apply(record.id, unknown)

    def _fail(self, record: CapacityRecord, ext: Extension, reason: str) -> None:
        """Nothing was bought (the answer was certain, or nothing was sent)."""

        def failed(r: CapacityRecord) -> Change | None:
            step = steps.purchase_failed(r, ext.number, reason)
            return Change.of(step, "extension-failed", BOT, reason)

        self.changes.apply(record.id, failed)


def _with_extension(res: Reservation, ext: Extension) -> Reservation:
    """The reservation as AWS holds it once the extension is applied: the new end, and
    its fee added to what was paid (as a purchase made now adds it)."""
    fee = (res.fee_usd or 0.0) + ext.offer.fee_usd
    return res.model_copy(update={"end": ext.offer.end, "fee_usd": fee})


def _stage(ext: Extension) -> Stage:
    """Where the extension's purchase is in the buy-once protocol."""
    return {
        ExtensionStatus.APPROVED: Stage.APPROVED,
        ExtensionStatus.PURCHASING: Stage.BUYING,
        ExtensionStatus.UNKNOWN: Stage.UNKNOWN,
    }.get(ext.status, Stage.SETTLED)
