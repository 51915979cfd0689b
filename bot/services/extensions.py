"""Extending a reservation: asked with the Extend button, approved like a purchase, bought
exactly once, then the reminders move with the new end.

The money rules are the purchase's, by the same protocol:
- the spending policy judges its fee and the request's total after it (more approvers, or
  refused before anyone is asked);
- enough allowed approvers, none of them the person asking or the requester;
- the buy job claims it (approved -> purchasing, exactly one wins) with an attempt and a
  lease; just before buying AWS is asked where the reservation ends (an extension already
  applied is not bought again), and the offer is looked up again (refused if its price
  rose or its window moved);
- the purchase call is sent once; an outcome that is not certain is reconciled by where
  AWS says the reservation ends: found, it is bought; not found, it is `purchase_unknown`,
  looked for again, never bought again. A job that finds a claim whose lease ran out does
  the same. That part is bot/services/extension_buying.py; this module asks, decides and
  tells.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.elements import section
from bot.blocks.reminders import extension_card
from bot.blocks.text import clip, esc, quoted, usd, when
from bot.domain import extension_steps as steps
from bot.domain.approval import SpendingPolicy, judge_budget
from bot.domain.decisions import Outcome
from bot.domain.extension import (
    DEFAULT_EXTENSION_HOURS,
    Extension,
    ExtensionStatus,
    extension_hours_valid,
    extension_refusal,
)
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, SlackMessage
from bot.services.actor import Actor, NotAllowed
from bot.services.changes import BOT, Change, RequestChanges
from bot.services.delivery import OnceOnly
from bot.services.extension_buying import ExtensionBuyer
from bot.services.jobs import BUYING, JobKind, JobRegistry
from bot.services.ports import (
    Clock,
    ExtensionMarket,
    ExtensionUnavailable,
    Job,
)
from bot.services.spending import SpendLedger

log = logging.getLogger(__name__)
EXTENDABLE_STATES = frozenset({State.SCHEDULED, State.ACTIVE, State.EXPIRING})
# Where an extension asked earlier may still wait for a person (the window may have ended).
WITH_EXTENSIONS = EXTENDABLE_STATES | {State.EXPIRED}


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtensionJob(_Payload):
    request: str
    number: int


POST_CARD = JobKind("extension-card", ExtensionJob)
BUY = JobKind("extend", ExtensionJob, BUYING)
TELL = JobKind("extension-told", ExtensionJob)
KINDS: tuple[JobKind[Any], ...] = (POST_CARD, BUY, TELL)


def _key(request_id: str, number: int) -> str:
    return f"{request_id}:x{number}"


def extension_job(kind: JobKind[ExtensionJob], request_id: str, number: int, due: datetime) -> Job:
    """The `kind` job of extension `number` of the request (one per kind and extension)."""
    payload = ExtensionJob(request=request_id, number=number)
    return kind.job(_key(request_id, number), due, payload)


class ExtensionError(Exception):
    """Why an extension cannot be asked for or decided; shown to the person as is."""


@dataclass(frozen=True)
class Asked:
    extension: Extension
    record: CapacityRecord


class ExtensionService:
    def __init__(
        self,
        changes: RequestChanges,
        market: ExtensionMarket,
        delivery: OnceOnly,
        clock: Clock,
        approval_channel: str,
        policy: SpendingPolicy | None = None,
        ledger: SpendLedger | None = None,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.market = market
        self.delivery = delivery
        self.clock = clock
        self.approval_channel = approval_channel
        self.policy = policy or SpendingPolicy()
        self.buyer = ExtensionBuyer(changes, market, clock)
        self.ledger = ledger or SpendLedger(changes.store, now=changes.now)

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(POST_CARD, self.post_card)
        jobs.register(BUY, self.buy)
        jobs.register(TELL, self.tell)

    # --- asking ---------------------------------------------------------------------------

    def ask(
        self,
        request_id: str,
        actor: Actor,
        hours: int = DEFAULT_EXTENSION_HOURS,
    ) -> Asked:
        """The Extend button: look up the price now and ask the approvers."""
        record = self._extendable(request_id, actor)
        user = actor.user
        res = record.reservation
        assert res is not None
        duration = int((res.end - res.start).total_seconds() // 3600)
        if not extension_hours_valid(duration, hours):
            raise ExtensionError(
                f"{hours // 24} d more is not an extension AWS sells for this reservation: "
                "whole days up to 14, then weeks, up to 182 days in all."
            )
        try:
            offer = self.market.extension_offer(res, hours)
        except ExtensionUnavailable as exc:
            raise ExtensionError(f"AWS offers no extension of {request_id} to buy: {exc}.") from exc
        if offer is None:
            raise ExtensionError(f"AWS offers no extension of {request_id} right now.")
        paid = record.money.committed_usd
        budget = self.ledger.check(record, offer.fee_usd)
        spend = self.policy.judge(offer.fee_usd, paid_before_usd=paid)
        spend = judge_budget(spend, budget, self.ledger.over_budget, "extension")
        if spend.refusal is not None:
            raise ExtensionError(f"{request_id} cannot be extended: {spend.refusal}.")
        now = self.clock.now()

        detail = f"{hours // 24} d to {when(offer.end)} for {usd(offer.fee_usd)}"

        def asked(r: CapacityRecord) -> Change | None:
            step = steps.asked(r, offer, user, now, spend.approvals, paid, budget)
            return Change.of(step, "extension-asked", user, detail)

        saved, change = self.changes.apply(request_id, asked)
        if saved is None or change is None or saved.extension is None:
            raise ExtensionError(f"An extension of {request_id} is already waiting.")
        return Asked(saved.extension, saved)

    def _extendable(self, request_id: str, actor: Actor) -> CapacityRecord:
        record = self.store.get(request_id)
        if record is None:
            raise ExtensionError(f"There is no request {request_id}.")
        if actor.user != record.requester and not actor.is_approver:
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

        at = f"{posted.channel} {posted.ts}"

        def remember(r: CapacityRecord) -> Change | None:
            step = steps.card_posted(r, job.number, posted.channel, posted.ts)
            return Change.of(step, "extension-card-posted", BOT, at)

        saved, _ = self.changes.apply(record.id, remember)
        if saved is not None and saved.extension and not saved.extension.status.open:
            self._update_card(saved)  # decided while the card was being posted

    # --- deciding -------------------------------------------------------------------------

    def decision_refusal(
        self, request_id: str, number: int, actor: Actor
    ) -> tuple[Extension | None, str | None]:
        """The extension `actor` is about to decide and, when they may not, why (asked
        before opening the reason form, so a refusal comes before any typing)."""
        record = self.store.get(request_id)
        if record is None:
            return None, f"There is no request {request_id}."
        why = steps.decision_refusal(record, number, actor.user, actor.is_approver)
        return (record.extension if why is None else None), why

    def decide(
        self,
        request_id: str,
        number: int,
        actor: Actor,
        approve: bool,
        reason: str = "",
    ) -> str:
        """Approve or Reject: the pure decision (bot.domain.extension.decide) applied as a
        compare-and-set; the last approval needed schedules the purchase in that step."""
        now = self.clock.now()
        user, is_approver = actor.user, actor.is_approver
        refused: list[str] = []
        outcomes: list[Outcome] = []

        def decided(r: CapacityRecord) -> Change | None:
            fee = r.extension.offer.fee_usd if r.extension else 0.0
            budget = self.ledger.check(r, fee) if approve else None
            rule = self.ledger.over_budget
            decision = steps.decided(
                r, number, user, is_approver, approve, reason, now, budget, rule
            )
            if decision.refusal is not None:
                refused.append(decision.refusal)
            if decision.outcome is not None:
                outcomes.append(decision.outcome)
            if decision.step is None:
                return None
            if decision.outcome is Outcome.PARTIAL:
                ext = decision.step.record.extension
                assert ext is not None
                got = f"{len(ext.approvals)} of {ext.required_approvals}"
                return Change.of(decision.step, "extension-approval", user, got, usd=fee)
            if approve:
                change = Change.of(decision.step, "extension-approved", user, reason, usd=fee)
                assert change is not None
                return replace(change, budget_guard=decision.budget_guard)
            return Change.of(decision.step, "extension-rejected", user, reason)

        record, change = self.changes.apply(request_id, decided)
        if record is None:
            return f"There is no request {request_id}."
        if change is None:
            return refused[0] if refused else "Nothing changed."
        if outcomes and outcomes[-1] is Outcome.PARTIAL:
            return (
                f"Approval recorded for the extension of {request_id}; it needs one more approver."
            )
        if approve:
            return f"Approved: extending {request_id} now."
        return f"Rejected the extension of {request_id}."

    # --- buying, once ---------------------------------------------------------------------

    def buy(self, job: ExtensionJob) -> None:
        """The buy job: exactly once (bot/services/extension_buying.py)."""
        self.buyer.buy(job.request, job.number)

    def check_again(self, request_id: str, number: int, actor: Actor) -> Extension | None:
        """Check again on an unknown extension (approvers only): look at the end AWS shows
        once more; never buys. Raises NotAllowed for anyone else."""
        if not actor.is_approver:
            raise NotAllowed("Only approvers can check an extension's purchase.")
        record = self.store.get(request_id)
        ext = record.extension if record else None
        if record is None or ext is None or ext.number != number:
            return None
        if ext.status is ExtensionStatus.UNKNOWN:
            self.buyer.look_once(record, ext)
            fresh = self.store.get(request_id)
            return fresh.extension if fresh else None
        return ext

    def mark_failed(self, request_id: str, number: int, actor: Actor) -> Extension | None:
        """Mark failed (approvers only): a person's word that the unknown extension was
        not bought; the bot never buys it, and a new one may be asked. Raises NotAllowed
        for anyone else."""
        if not actor.is_approver:
            raise NotAllowed("Only approvers can mark an extension failed.")
        why = steps.MARKED_FAILED

        def failed(r: CapacityRecord) -> Change | None:
            return Change.of(steps.marked_failed(r, number), "extension-failed", actor.user, why)

        saved, _ = self.changes.apply(request_id, failed)
        return saved.extension if saved else None

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
        elif ext.status is ExtensionStatus.PAYMENT_PENDING:
            text = (
                f":credit_card: AWS took the extension of {record.id} to {when(offer.end)} "
                f"({usd(offer.fee_usd)}) and is processing its payment. Until AWS says it "
                f"is paid, {record.id} still ends {when(offer.start)} and your reminders "
                "stay as they are; you will hear either way."
            )
        elif ext.status is ExtensionStatus.FAILED:
            # AWS's refusal is not bounded and escaping can make it 5x longer: clip first.
            text = f":x: {record.id} was not extended: {esc(clip(ext.reason, 500))}."
            if ext.reason == steps.PAYMENT_FAILED:
                self._tell_approvers(record, ext, text)
        elif ext.status is ExtensionStatus.UNKNOWN:
            text = (
                f":warning: The extension of {record.id} to {when(offer.end)} may or may not "
                f"have been bought: {esc(ext.reason)}. Check the account; you will hear when "
                "AWS shows it."
            )
        else:
            return
        key = f"extension-told:{_key(record.id, ext.number)}:{ext.status.value}"
        block = section(text)
        self.delivery.send(key, record.requester, text, [block])

    def _tell_approvers(self, record: CapacityRecord, ext: Extension, text: str) -> None:
        """In the thread of the approvers' card: they approved a fee that was not paid."""
        if ext.card_channel is None or ext.card_ts is None:
            return
        key = f"extension-told-approvers:{_key(record.id, ext.number)}:{ext.status.value}"
        self.delivery.send(key, ext.card_channel, text, [section(text)], thread_ts=ext.card_ts)
