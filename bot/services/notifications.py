"""Telling people, as a job after the state change (an outbox).

Every change that people should see schedules `notify:<request id>` in the same
compare-and-set as the change. The job renders the request as it is *now*, so deliveries
converge on the latest state whatever their order: the approval card is posted once (or
updated in place), and the requester gets one message per decision. A Slack failure
leaves the job to be retried; the state is already right in the store.
"""

from __future__ import annotations

from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.changes import BOT, Change, apply_change
from bot.services.ports import Clock, Notifier, Store

# Outcomes of an approval: the requester hears of each by direct message, once.
APPROVAL_OUTCOMES = frozenset(
    {
        State.APPROVED,
        State.REJECTED,
        State.TIMED_OUT,
        State.PAYMENT_PENDING,
        State.SCHEDULED,
        State.ACTIVE,
        State.EXPIRED,
        State.FAILED,
        State.PURCHASE_UNKNOWN,
    }
)
# States before the request was submitted: it has no approval card.
BEFORE_SUBMISSION = frozenset({State.DRAFT, State.QUOTED, State.FAILED})


class NotificationService:
    def __init__(self, store: Store, notifier: Notifier, clock: Clock) -> None:
        self.store = store
        self.notifier = notifier
        self.clock = clock

    def deliver(self, request_id: str) -> None:
        record = self.store.get(request_id)
        if record is None:
            return
        if record.approval_message is None:
            if record.state in BEFORE_SUBMISSION or record.state is State.CANCELLED:
                return  # never submitted (or cancelled before): nothing was posted
            record = self._post_card(record)
        else:
            self.notifier.update_request(record)
        # Per attempt: a request re-quoted and approved again is told again.
        told = f"told:{record.id}:{record.state.value}:{len(record.attempts)}"
        if record.state is State.QUOTED and record.failure and not self.store.delivered(told):
            # Not bought (the offering moved, AWS refused): the new quote, to submit again.
            self.notifier.tell_requester(record)
            self.notifier.quote_ready(record, None)
            self.store.mark_delivered(told, self.clock.now())
        if record.state in APPROVAL_OUTCOMES and not self.store.delivered(told):
            self.notifier.tell_requester(record)
            self.store.mark_delivered(told, self.clock.now())

    def _post_card(self, record: CapacityRecord) -> CapacityRecord:
        message = self.notifier.post_request(record)
        if message is None:
            return record

        def posted(r: CapacityRecord) -> Change | None:
            if r.approval_message is not None:
                return None
            new = r.model_copy(update={"approval_message": message})
            return Change(new, "posted", BOT, f"{message.channel} {message.ts}")

        saved, _ = apply_change(self.store, record.id, posted, self.clock.now)
        if saved is not None and saved.state is not record.state:
            self.notifier.update_request(saved)  # decided while the card was being posted
        return saved or record
