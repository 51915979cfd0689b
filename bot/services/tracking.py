"""Following what was bought to its end: the track job polls AWS for the reservation
(payment pending, scheduled, active, expired) and moves the request with it; On-Demand
and Spot, with nothing bought, follow their window. What each change causes is in
bot/services/reactions.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain import purchase_steps as steps
from bot.domain.audit import BOT
from bot.domain.lifecycle import TRANSITIONS, State
from bot.domain.purchase import lifecycle_state
from bot.domain.records import CapacityRecord, Reservation
from bot.services.changes import Change, RequestChanges
from bot.services.jobs import RetryLater
from bot.services.ports import Clock, PurchaseError, Purchaser

# Polls: soon while payment settles, then at the next moment something should change.
FIRST_POLL = timedelta(minutes=1)
MAX_POLL = timedelta(hours=1)
TRACKED_STATES = frozenset({State.PAYMENT_PENDING, State.SCHEDULED, State.ACTIVE, State.EXPIRING})


class ReservationTracker:
    """The track job of `PurchaseService` (which owns one and answers `run_track`)."""

    def __init__(self, changes: RequestChanges, purchaser: Purchaser, clock: Clock) -> None:
        self.changes = changes
        self.store = changes.store
        self.purchaser = purchaser
        self.clock = clock

    def run_track(self, request_id: str) -> CapacityRecord | None:
        record = self.store.get(request_id)
        if record is None or record.state.final or record.state not in TRACKED_STATES:
            return record
        now = self.clock.now()
        if record.reservation is None:
            return self._track_window(record, now)
        try:
            fresh = self.purchaser.refresh(record.reservation)
        except PurchaseError as error:
            raise RetryLater(now + FIRST_POLL * 5, f"tracking failed: {error}") from error
        fresh = fresh.model_copy(
            update={"checked_at": now, "fee_usd": record.reservation.fee_usd or fresh.fee_usd}
        )
        target = lifecycle_state(fresh.kind, fresh.state)
        saved = record
        if fresh.state != record.reservation.state or (
            target is not None and target is not record.state
        ):
            saved = self._follow(record, fresh, target) or record
        if saved.state.final or saved.state is State.EXPIRED:
            return saved
        raise RetryLater(self._next_poll(saved, now), f"{saved.state.label}: polling AWS")

    def _follow(
        self, record: CapacityRecord, fresh: Reservation, target: State | None
    ) -> CapacityRecord | None:
        def followed(r: CapacityRecord) -> Change | None:
            step = steps.tracked(r, record.version, fresh, target, self.clock.now())
            return Change.of(step, "tracked", BOT, f"AWS: {fresh.state}")

        saved, _ = self.changes.apply(record.id, followed)
        return saved

    def _track_window(self, record: CapacityRecord, now: datetime) -> CapacityRecord | None:
        """On-Demand and Spot: active in the window, expired after it."""
        request = record.request
        target = (
            State.EXPIRED if now >= request.end else State.ACTIVE if now >= request.start else None
        )
        if target is None:
            raise RetryLater(request.start, "waiting for the window to open")
        saved = record
        if target is not record.state and target in TRANSITIONS[record.state]:
            seen = record.state

            def moved_on(r: CapacityRecord) -> Change | None:
                step = steps.window_moved_on(r, seen, target, self.clock.now())
                return Change.of(step, target.value, BOT, "its window")

            saved = self.changes.apply(record.id, moved_on)[0] or record
        if saved.state is State.EXPIRED:
            return saved
        raise RetryLater(request.end, "waiting for the window to close")

    def _next_poll(self, record: CapacityRecord, now: datetime) -> datetime:
        reservation = record.reservation
        if record.state is State.PAYMENT_PENDING or reservation is None:
            return now + FIRST_POLL * 2
        moment = reservation.start if record.state is State.SCHEDULED else reservation.end
        return max(now + FIRST_POLL, min(moment, now + MAX_POLL))
