"""Approve and Reject: the money gate.

The decision is the pure `bot.domain.approval` function; this service applies it as a
compare-and-set, so twenty concurrent clicks, Slack retries and two replicas produce one
transition. An approved request waits in the `approved` state for purchasing: that single
transition is the purchase hand-off.

The team's budget is judged at every approval against the month's held and paid as kept
now; a decisive approval judged within it carries a guard the write checks again, and one
that loses to another approval of the same team is decided again on the fresh totals.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.domain import approval
from bot.domain import events as on
from bot.domain.approval import Decision
from bot.domain.decisions import Outcome
from bot.domain.events import Event
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request_ids import normalise_id
from bot.services.actor import Actor
from bot.services.approvers import ApproverDirectory
from bot.services.changes import Change, RequestChanges
from bot.services.ports import Clock
from bot.services.spending import SpendLedger


class ApprovalService:
    def __init__(
        self,
        changes: RequestChanges,
        directory: ApproverDirectory,
        clock: Clock,
        ledger: SpendLedger | None = None,
    ) -> None:
        self.changes = changes
        self.store = changes.store
        self.directory = directory
        self.clock = clock
        self.ledger = ledger or SpendLedger(changes.store, now=clock.now)

    def is_approver(self, user: str) -> bool:
        return self.directory.is_approver(user)

    def waiting_for(
        self, actor: Actor, offset: int = 0, limit: int | None = None
    ) -> tuple[list[CapacityRecord], int] | None:
        """A page of what waits for this approver, oldest request first: requests and
        extensions they may decide (not their own, not approved by them already),
        purchases and extensions whose outcome is unknown (an approver checks AWS or marks
        them failed), leftovers handed to the approvers to clean up; and how many there
        are in all. None when they are not an approver. Read from the waiting list kept
        with every change: only the page's records are read."""
        if not actor.is_approver:
            return None
        ids, total = self.store.waiting_for(actor.user, offset, limit)
        return self.store.get_many(ids), total

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

        def decide(record: CapacityRecord) -> Decision:
            budget = self.ledger.check(record, record.most_usd or 0.0)
            now = self.clock.now()
            rule = self.ledger.over_budget
            return approval.approve(record, user, is_approver, now, budget, rule)

        return self._decide(request_id, decide, describe)

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
        return Change(record, event, action, user, detail, budget_guard=decision.budget_guard)

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
        last = decisions[-1]
        return Decision(last.outcome, saved, budget=last.budget)
