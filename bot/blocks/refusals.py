"""Why a click on Approve or Reject changed nothing, in words for the person who clicked."""

from __future__ import annotations

from bot.blocks.text import esc
from bot.domain.budgets import BudgetCheck, over_budget_refusal
from bot.domain.decisions import Outcome
from bot.domain.records import CapacityRecord
from bot.domain.request import MAX_REASON_CHARS

REFUSALS = {
    Outcome.NOT_APPROVER: "Only approvers can decide GPU requests.",
    Outcome.OWN_REQUEST: "You cannot approve or reject your own request.",
    Outcome.ALREADY_APPROVED_BY_YOU: "You have approved this already; it needs another approver.",
    Outcome.REASON_REQUIRED: "A rejection needs a reason.",
    Outcome.REASON_TOO_LONG: f"Keep the reason under {MAX_REASON_CHARS} characters.",
    Outcome.TOO_LATE: "This request's time for a decision has passed; it is timing out.",
    Outcome.OVER_BUDGET: "Not approved: it takes the team over its monthly budget.",
}


def refusal_text(
    outcome: Outcome, record: CapacityRecord, budget: BudgetCheck | None = None
) -> str:
    if outcome is Outcome.NOT_PENDING:
        return f"Request {record.id} is {record.state.label} already."
    if outcome is Outcome.OVER_BUDGET and budget is not None:
        return f":no_entry: Not approved: {esc(over_budget_refusal(budget))}."
    return f":warning: {REFUSALS[outcome]}"
