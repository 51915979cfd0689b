"""Approve and Reject: the money gate.

The decision is the pure `bot.domain.approval` function; this service applies it as a
compare-and-set, so twenty concurrent clicks, Slack retries and two replicas produce one
transition. An approved request waits in the `approved` state for purchasing: that single
transition is the purchase hand-off.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.domain import approval
from bot.domain import events as on
from bot.domain.approval import Decision
from bot.domain.cleanup import waits_for_approvers
from bot.domain.decisions import Outcome
from bot.domain.events import Event
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request_ids import normalise_id
from bot.services.actor import Actor
from bot.services.approvers import ApproverDirectory
from bot.services.changes import Change, RequestChanges
from bot.services.ports import Clock


class ApprovalService:
    def __init__(self, changes: RequestChanges, directory: ApproverDirectory, clock: Clock) -> None:
        self.changes = changes
        self.store = changes.store
        self.directory = directory
        self.clock = clock

    def is_approver(self, user: str) -> bool:
        return self.directory.is_approver(user)

    def waiting_for(self, actor: Actor) -> list[CapacityRecord] | None:
        """What waits for this approver: pending requests they may decide (not their own),
        then purchases whose outcome is unknown (an approver checks AWS or marks them
        failed), then leftovers handed to the approvers to clean up; None when they are
        not an approver."""
        if not actor.is_approver:
            return None
        pending = self.store.in_state(State.PENDING_APPROVAL)
        user = actor.user
        decide = [r for r in pending if r.requester != user and user not in r.approvers]
        ended = self.store.in_state(State.EXPIRED)
        handed = [r for r in ended if waits_for_approvers(r.cleanup)]
        return decide + self.store.in_state(State.PURCHASE_UNKNOWN) + handed

    def refusal(
        self, request_id: str, actor: Actor, approving: bool = False
    ) -> tuple[CapacityRecord | None, Outcome | None]:
        """Why `actor` may not decide (`approving`: approve) this request now; None when
        they may."""
        record = self.store.get(normalise_id(request_id))
        if record is None:
            return None, None
        check = approval.approve_refusal if approving else approval.refusal
        return record, check(record, actor.user, actor.is_approver, self.clock.now())

    def approve(self, request_id: str, actor: Actor) -> Decision | None:
        user, is_approver = actor.user, actor.is_approver

        def describe(record: CapacityRecord, decision: Decision) -> Change:
            if decision.outcome is Outcome.PARTIAL:
                count = f"{len(decision.record.approvals)} of {record.required_approvals}"
                return self._change(decision, "approval", user, count)
            return self._change(decision, "approved", user, "handed to purchasing")

        return self._decide(
            request_id,
            lambda record: approval.approve(record, user, is_approver, self.clock.now()),
            describe,
        )

    def reject(self, request_id: str, actor: Actor, reason: str) -> Decision | None:
        user, is_approver = actor.user, actor.is_approver
        return self._decide(
            request_id,
            lambda record: approval.reject(record, user, is_approver, reason, self.clock.now()),
            lambda record, decision: self._change(decision, "rejected", user, reason.strip()),
        )

    def _change(self, decision: Decision, action: str, user: str, detail: str) -> Change:
        """The decision with its audit words and its event (see bot.services.reactions:
        people are told, an approved request is bought, a decided one times out no
        more)."""
        record = decision.record
        event: Event = on.ApprovalRecorded()
        if record.state is State.APPROVED:
            event = on.Approved()
        elif record.state is State.REJECTED:
            event = on.Rejected()
        return Change(record, event, action, user, detail)

    def _decide(
        self,
        request_id: str,
        decide: Callable[[CapacityRecord], Decision],
        describe: Callable[[CapacityRecord, Decision], Change],
    ) -> Decision | None:
        """Apply a pure decision as a compare-and-set, decided again on a fresh read when
        someone else changed the request first."""
        decisions: list[Decision] = []

        def attempt(record: CapacityRecord) -> Change | None:
            decision = decide(record)
            decisions.append(decision)
            return describe(record, decision) if decision.outcome.changed else None

        saved, _ = self.changes.apply(normalise_id(request_id), attempt)
        if saved is None:
            return None
        return Decision(decisions[-1].outcome, saved)
