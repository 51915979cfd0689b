"""Extending a reservation: asked with the Extend button, approved like a purchase, bought
exactly once, then the reminders move with the new end.

The money rules are the purchase's: an allowed approver who is not the person asking;
one compare-and-set from approved to purchasing that exactly one job wins; the offer is
looked up again just before buying and refused if its price rose or its window moved;
after a crash mid-purchase AWS is asked where the reservation ends before anything is
bought again (an extension offering also names the end it extends, so AWS itself
refuses it once used).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.reminders import extension_card
from bot.blocks.text import clip, esc, quoted, usd, when
from bot.domain.extension import (
    DEFAULT_EXTENSION_HOURS,
    Extension,
    ExtensionStatus,
    approver_refusal,
    extension_hours_valid,
    extension_refusal,
    price_moved,
)
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Reservation, SlackMessage
from bot.services.changes import BOT, Change, apply_change
from bot.services.delivery import OnceOnly
from bot.services.jobs import JobKind, JobRegistry
from bot.services.ports import Clock, ExtensionMarket, Store

log = logging.getLogger(__name__)
EXTENDABLE_STATES = frozenset({State.SCHEDULED, State.ACTIVE, State.EXPIRING})


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtensionJob(_Payload):
    request: str
    number: int


POST_CARD = JobKind("extension-card", ExtensionJob)
BUY = JobKind("extend", ExtensionJob)
TELL = JobKind("extension-told", ExtensionJob)
KINDS: tuple[JobKind[Any], ...] = (POST_CARD, BUY, TELL)


def _key(request_id: str, number: int) -> str:
    return f"{request_id}:x{number}"


class ExtensionError(Exception):
    """Why an extension cannot be asked for or decided; shown to the person as is."""


@dataclass(frozen=True)
class Asked:
    extension: Extension
    record: CapacityRecord


class ExtensionService:
    def __init__(
        self,
        store: Store,
        market: ExtensionMarket,
        delivery: OnceOnly,
        clock: Clock,
        approval_channel: str,
    ) -> None:
        self.store = store
        self.market = market
        self.delivery = delivery
        self.clock = clock
        self.approval_channel = approval_channel

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(POST_CARD, self.post_card)
        jobs.register(BUY, self.buy)
        jobs.register(TELL, self.tell)

    # --- asking ---------------------------------------------------------------------------

    def ask(
        self,
        request_id: str,
        user: str,
        is_approver: bool,
        hours: int = DEFAULT_EXTENSION_HOURS,
    ) -> Asked:
        """The Extend button: look up the price now and ask the approvers."""
        record = self._extendable(request_id, user, is_approver)
        res = record.reservation
        assert res is not None
        duration = int((res.end - res.start).total_seconds() // 3600)
        if not extension_hours_valid(duration, hours):
            raise ExtensionError(
                f"{hours // 24} d more is not an extension AWS sells for this reservation: "
                "whole days up to 14, then weeks, up to 182 days in all."
            )
        offer = self.market.extension_offer(res, hours)
        if offer is None:
            raise ExtensionError(f"AWS offers no extension of {request_id} right now.")
        now = self.clock.now()

        def asked(r: CapacityRecord) -> Change | None:
            if r.extension is not None and r.extension.status.open:
                return None
            number = (r.extension.number + 1) if r.extension else 1
            ext = Extension(number=number, offer=offer, requested_by=user, requested_at=now)
            job = POST_CARD.job(_key(r.id, number), now, ExtensionJob(request=r.id, number=number))
            detail = f"{hours // 24} d to {when(offer.end)} for {usd(offer.fee_usd)}"
            new = r.model_copy(update={"extension": ext})
            return Change(new, "extension-asked", user, detail, schedule=(job,))

        saved, change = apply_change(self.store, request_id, asked, self.clock.now)
        if saved is None or change is None or saved.extension is None:
            raise ExtensionError(f"An extension of {request_id} is already waiting.")
        return Asked(saved.extension, saved)

    def _extendable(self, request_id: str, user: str, is_approver: bool) -> CapacityRecord:
        record = self.store.get(request_id)
        if record is None:
            raise ExtensionError(f"There is no request {request_id}.")
        if user != record.requester and not is_approver:
            raise ExtensionError(
                f"Only the requester of {request_id} or an approver can extend it."
            )
        res = record.reservation
        if record.state not in EXTENDABLE_STATES or res is None:
            raise ExtensionError(
                f"Request {request_id} is {record.state.label}: it cannot be extended."
            )
        why = extension_refusal(res.kind, res.start, res.end, self.clock.now())
        if why is not None:
            raise ExtensionError(f"{request_id} cannot be extended: {why}.")
        if record.extension is not None and record.extension.status.open:
            status = record.extension.status.value.replace("_", " ")
            raise ExtensionError(f"An extension of {request_id} is already {status}.")
        return record

    def post_card(self, job: ExtensionJob) -> None:
        record = self.store.get(job.request)
        ext = record.extension if record else None
        if record is None or ext is None or ext.number != job.number:
            return
        card = extension_card(record.id, record.requester, ext)
        key = f"extension-card:{_key(record.id, ext.number)}"
        posted = self.delivery.send(key, self.approval_channel, card.text, card.blocks)
        if posted is None:
            return

        def remember(r: CapacityRecord) -> Change | None:
            if r.extension is None or r.extension.number != job.number:
                return None
            where = {"card_channel": posted.channel, "card_ts": posted.ts}
            new = r.model_copy(update={"extension": r.extension.model_copy(update=where)})
            return Change(new, "extension-card-posted", BOT, f"{posted.channel} {posted.ts}")

        saved, _ = apply_change(self.store, record.id, remember, self.clock.now)
        if saved is not None and saved.extension and not saved.extension.status.open:
            self._update_card(saved)  # decided while the card was being posted

    # --- deciding -------------------------------------------------------------------------

    def decision_refusal(
        self, request_id: str, number: int, user: str, is_approver: bool
    ) -> tuple[Extension | None, str | None]:
        """The extension `user` is about to decide and, when they may not, why (asked
        before opening the reason form, so a refusal comes before any typing)."""
        record = self.store.get(request_id)
        if record is None:
            return None, f"There is no request {request_id}."
        why = _decision_refusal(record, number, user, is_approver)
        return (record.extension if why is None else None), why

    def decide(
        self,
        request_id: str,
        number: int,
        user: str,
        is_approver: bool,
        approve: bool,
        reason: str = "",
    ) -> str:
        now = self.clock.now()
        refused: list[str] = []

        def decided(r: CapacityRecord) -> Change | None:
            why = _decision_refusal(r, number, user, is_approver)
            if why is not None:
                refused.append(why)
                return None
            ext = r.extension
            assert ext is not None  # checked by _decision_refusal
            status = ExtensionStatus.APPROVED if approve else ExtensionStatus.REJECTED
            new_ext = ext.model_copy(
                update={"status": status, "approved_by": user, "decided_at": now, "reason": reason}
            )
            payload = ExtensionJob(request=r.id, number=number)
            job = (BUY if approve else TELL).job(_key(r.id, number), now, payload)
            new = r.model_copy(update={"extension": new_ext})
            action = "extension-approved" if approve else "extension-rejected"
            return Change(new, action, user, reason, schedule=(job,))

        record, change = apply_change(self.store, request_id, decided, self.clock.now)
        if record is None:
            return f"There is no request {request_id}."
        if change is None:
            return refused[0] if refused else "Nothing changed."
        if approve:
            return f"Approved: extending {request_id} now."
        return f"Rejected the extension of {request_id}."

    # --- buying, once ---------------------------------------------------------------------

    def buy(self, job: ExtensionJob) -> None:
        record = self.store.get(job.request)
        ext = record.extension if record else None
        if record is None or ext is None or ext.number != job.number:
            return
        if ext.status is ExtensionStatus.APPROVED:
            record = self._claim(record, ext)
            if record is None:
                return  # another job won the claim
        elif ext.status is not ExtensionStatus.PURCHASING:
            return  # bought, failed or rejected already
        res = record.reservation
        assert res is not None and record.extension is not None
        ext = record.extension
        # A previous attempt may have bought it before dying: ask AWS first.
        if self.market.current_end(res) >= ext.offer.end:
            self._finish(record, ext, res.model_copy(update={"end": ext.offer.end}), "found")
            return
        current = self.market.extension_offer(res, ext.offer.hours)
        if current is None or price_moved(ext.offer, current):
            now_price = usd(current.fee_usd) if current else "no offer"
            approved = usd(ext.offer.fee_usd)
            why = f"the price moved ({approved} approved, {now_price} now): ask again"
            self._fail(record, ext, why)
            return
        bought = self.market.buy_extension(res, current)
        self._finish(record, ext, bought, "bought")

    def _claim(self, record: CapacityRecord, ext: Extension) -> CapacityRecord | None:
        """approved -> purchasing: exactly one caller wins."""

        def claim(r: CapacityRecord) -> Change | None:
            if r.extension is None or r.extension.number != ext.number:
                return None
            if r.extension.status is not ExtensionStatus.APPROVED:
                return None
            new_ext = r.extension.model_copy(update={"status": ExtensionStatus.PURCHASING})
            new = r.model_copy(update={"extension": new_ext})
            return Change(new, "extension-purchasing", BOT, ext.offer.offering_id[:80])

        saved, change = apply_change(self.store, record.id, claim, self.clock.now)
        return saved if change is not None else None

    def _finish(self, record: CapacityRecord, ext: Extension, res: Reservation, how: str) -> None:
        def done(r: CapacityRecord) -> Change | None:
            if r.extension is None or r.extension.number != ext.number:
                return None
            if r.extension.status is not ExtensionStatus.PURCHASING:
                return None
            new_ext = r.extension.model_copy(update={"status": ExtensionStatus.BOUGHT})
            # The new end moves the reminders (the store's follower) in this same step.
            new = r.model_copy(update={"extension": new_ext, "reservation": res})
            payload = ExtensionJob(request=r.id, number=ext.number)
            tell = TELL.job(_key(r.id, ext.number), self.clock.now(), payload)
            detail = f"{how}: ends {when(res.end)}, {usd(ext.offer.fee_usd)}"
            return Change(new, "extension-bought", BOT, detail, schedule=(tell,))

        apply_change(self.store, record.id, done, self.clock.now)

    def _fail(self, record: CapacityRecord, ext: Extension, reason: str) -> None:
        def failed(r: CapacityRecord) -> Change | None:
            if r.extension is None or r.extension.number != ext.number:
                return None
            new_ext = r.extension.model_copy(
                update={"status": ExtensionStatus.FAILED, "reason": reason}
            )
            payload = ExtensionJob(request=r.id, number=ext.number)
            tell = TELL.job(_key(r.id, ext.number), self.clock.now(), payload)
            new = r.model_copy(update={"extension": new_ext})
            return Change(new, "extension-failed", BOT, reason, schedule=(tell,))

        apply_change(self.store, record.id, failed, self.clock.now)

    def _update_card(self, record: CapacityRecord) -> None:
        """The approvers' card without its buttons once decided."""
        ext = record.extension
        if ext is None or ext.card_channel is None or ext.card_ts is None:
            return
        card = extension_card(record.id, record.requester, ext)
        where = SlackMessage(channel=ext.card_channel, ts=ext.card_ts)
        self.delivery.update(where, card.text, card.blocks)

    def tell(self, job: ExtensionJob) -> None:
        """Tell the requester how the extension ended, and update the approvers' card."""
        record = self.store.get(job.request)
        ext = record.extension if record else None
        if record is None or ext is None or ext.number != job.number:
            return
        self._update_card(record)
        offer = ext.offer
        if ext.status is ExtensionStatus.BOUGHT:
            text = (
                f":white_check_mark: {record.id} is extended to {when(offer.end)} "
                f"({usd(offer.fee_usd)}). Your reminders moved with it."
            )
        elif ext.status is ExtensionStatus.REJECTED:
            why = quoted(ext.reason) if ext.reason else "no reason given"  # the approver's words
            text = f":no_entry: The extension of {record.id} was rejected: {why}."
        elif ext.status is ExtensionStatus.FAILED:
            # AWS's refusal is not bounded and escaping can make it 5x longer: clip first.
            text = f":x: {record.id} was not extended: {esc(clip(ext.reason, 500))}."
        else:
            return
        key = f"extension-told:{_key(record.id, ext.number)}:{ext.status.value}"
        block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
        self.delivery.send(key, record.requester, text, [block])


def _decision_refusal(
    record: CapacityRecord, number: int, user: str, is_approver: bool
) -> str | None:
    ext = record.extension
    if ext is None or ext.number != number:
        return f"That extension of {record.id} was replaced by a newer one."
    why = approver_refusal(ext, user, is_approver, record.requester)
    return why[0].upper() + why[1:] + "." if why is not None else None
