"""Approve and Reject: the money gate.

The decision is the pure `bot.domain.approval` function; this service applies it as a
compare-and-set, so twenty concurrent clicks, Slack retries and two replicas produce one
transition. An approved request waits in the `approved` state for purchasing: that single
transition is the purchase hand-off.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.adapters.clock import Clock
from bot.adapters.store import RedisStore
from bot.domain import approval
from bot.domain.approval import Decision, Outcome
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.approvers import ApproverDirectory
from bot.services.ports import Notifier
from bot.services.requests import Change, apply_change, normalise_id, timeout_job_id


class ApprovalService:
    def __init__(
        self, store: RedisStore, directory: ApproverDirectory, notifier: Notifier, clock: Clock
    ) -> None:
        self.store = store
        self.directory = directory
        self.notifier = notifier
        self.clock = clock

    def is_approver(self, user: str) -> bool:
        return self.directory.is_approver(user)

    def waiting_for(self, user: str) -> list[CapacityRecord]:
        """Pending requests this user may decide (not their own)."""
        if not self.is_approver(user):
            return []
        pending = self.store.in_state(State.PENDING_APPROVAL)
        return [r for r in pending if r.requester != user and user not in r.approvers]

    def approve(self, request_id: str, user: str) -> Decision | None:
        is_approver = self.directory.is_approver(user)

        def change(record: CapacityRecord, decision: Decision) -> Change:
            if decision.outcome is Outcome.PARTIAL:
                n = len(decision.record.approvals)
                return Change(
                    decision.record, "approval", user, f"{n} of {record.required_approvals}"
                )
            return Change(
                decision.record,
                "approved",
                user,
                "handed to purchasing",
                cancel=(timeout_job_id(record.id),),
            )

        return self._decide(
            request_id,
            lambda record: approval.approve(record, user, is_approver, self.clock.now()),
            change,
        )

    def reject(self, request_id: str, user: str, reason: str) -> Decision | None:
        is_approver = self.directory.is_approver(user)
        return self._decide(
            request_id,
            lambda record: approval.reject(record, user, is_approver, reason, self.clock.now()),
            lambda record, decision: Change(
                decision.record,
                "rejected",
                user,
                reason.strip(),
                cancel=(timeout_job_id(record.id),),
            ),
        )

    def _decide(
        self,
        request_id: str,
        decide: Callable[[CapacityRecord], Decision],
        describe: Callable[[CapacityRecord, Decision], Change],
    ) -> Decision | None:
        """Apply a pure decision as a compare-and-set (decided again on a conflict), then
        update the card and, once the request is decided, tell the requester."""
        decisions: list[Decision] = []

        def attempt(record: CapacityRecord) -> Change | None:
            decision = decide(record)
            decisions.append(decision)
            return describe(record, decision) if decision.outcome.changed else None

        saved, change = apply_change(self.store, normalise_id(request_id), attempt, self.clock.now)
        if saved is None:
            return None
        decision = Decision(decisions[-1].outcome, saved)
        if change is not None:
            self.notifier.update_request(saved)
            if decision.outcome in (Outcome.APPROVED, Outcome.REJECTED):
                self.notifier.tell_requester(saved)
        return decision
