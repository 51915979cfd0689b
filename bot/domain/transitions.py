"""How a request moves: each transition takes the record as it is and returns the new
record and the event it was, or None when it no longer applies (decided meanwhile),
or raises `TransitionRefused` saying why a person may not make it.

The services read, call one of these, and write the result with its audit entry
(bot/services/changes.py); what each event causes is in bot/services/reactions.py.
Buying and following what was bought have theirs in bot/domain/purchase_steps.py (which
step comes next in bot/domain/buy_once.py), extensions in bot/domain/extension_steps.py,
measured usage in bot/domain/sampling.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.domain import events as on
from bot.domain.budgets import BudgetCheck
from bot.domain.cleanup import AnswerRefused, CleanupChoice, CleanupPrompt, answer
from bot.domain.events import Event
from bot.domain.lifecycle import CANCELLABLE, NOTHING_BOUGHT, State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, Choice, SlackMessage
from bot.domain.visibility import Viewer


@dataclass(frozen=True)
class Transition:
    record: CapacityRecord
    event: Event


class TransitionRefused(ValueError):
    """The person may not make this change now; the message says why."""


def moved(record: CapacityRecord, event: Event, **update: object) -> Transition:
    """The record with `update` applied, as the transition `event`."""
    return Transition(record.model_copy(update=update), event)


# --- asking --------------------------------------------------------------------------------


def quoted(record: CapacityRecord, quote: Quote, now: datetime) -> Transition | None:
    """draft -> quoted. The quote's request replaces the asked one: with region=any it
    names the region chosen, the one the offerings shown (and bought) are in."""
    if record.state is not State.DRAFT:
        return None
    return moved(
        record,
        on.Quoted(),
        state=State.QUOTED,
        quote=quote,
        request=quote.request,
        updated_at=now,
    )


def quote_failed(record: CapacityRecord, failure: str) -> Transition | None:
    if record.state is not State.DRAFT:
        return None
    return moved(record, on.QuoteFailed(), state=State.FAILED, failure=failure)


def submitted(
    record: CapacityRecord,
    choice: Choice,
    reason: str,
    approvals_needed: int,
    deadline: datetime,
    now: datetime,
    budget: BudgetCheck | None = None,
) -> Transition:
    """quoted -> pending_approval (what may be submitted is checked before: the
    submission rules and the team's budget, whose line the card shows)."""
    return moved(
        record,
        on.Submitted(),
        state=State.PENDING_APPROVAL,
        choice=choice,
        reason=reason,
        required_approvals=approvals_needed,
        budget=budget,
        approval_deadline=deadline,
        updated_at=now,
    )


def cancelled(record: CapacityRecord, user: str, now: datetime) -> Transition:
    """By its requester, before anything is bought: not approved yet, or an On-Demand or
    Spot window that has not opened."""
    if record.requester != user:
        raise TransitionRefused(f"Only the requester can cancel {record.id}.")
    if record.state not in CANCELLABLE and not _window_not_open(record, now):
        if record.state.final:
            raise TransitionRefused(f"Request {record.id} is {record.state.label} already.")
        raise TransitionRefused(
            f"Request {record.id} is {record.state.label}: only requests that are not "
            "approved yet (or On-Demand and Spot before their window opens) can be cancelled."
        )
    return moved(record, on.Cancelled(), state=State.CANCELLED, updated_at=now)


def timed_out(record: CapacityRecord, now: datetime) -> Transition | None:
    """pending_approval -> timed_out; nothing when it was decided meanwhile."""
    if record.state is not State.PENDING_APPROVAL:
        return None
    return moved(record, on.TimedOut(), state=State.TIMED_OUT, updated_at=now)


def _window_not_open(record: CapacityRecord, now: datetime) -> bool:
    """An On-Demand or Spot request scheduled for a window not open yet: nothing was
    bought, so cancelling it costs nothing (its reminders go with it)."""
    return (
        record.state is State.SCHEDULED
        and record.reservation is None
        and record.choice is not None
        and record.choice.kind.value in NOTHING_BOUGHT
        and now < record.request.start
    )


# --- the approval card ---------------------------------------------------------------------


def card_posted(record: CapacityRecord, message: SlackMessage) -> Transition | None:
    """The card is remembered once: a second post (a retried job) keeps the first."""
    if record.approval_message is not None:
        return None
    return moved(record, on.CardPosted(), approval_message=message)


# --- after the end -------------------------------------------------------------------------


def cleaned_up(record: CapacityRecord, prompt: CleanupPrompt) -> Transition | None:
    """expired -> cleaned_up: nothing tagged for the request is left."""
    if record.state is not State.EXPIRED:
        return None
    return moved(record, on.CleanedUp(), state=State.CLEANED_UP, cleanup=prompt)


def cleanup_step(
    record: CapacityRecord, expected: CleanupPrompt, prompt: CleanupPrompt
) -> Transition | None:
    """The prompt after a step the cleanup job took, unless it was answered meanwhile
    (that answer's job takes over)."""
    if record.state is not State.EXPIRED or (record.cleanup or CleanupPrompt()) != expected:
        return None
    return moved(record, on.CleanupStepTaken(), cleanup=prompt)


def cleanup_answered(
    record: CapacityRecord, who: Viewer, choice: CleanupChoice, now: datetime
) -> Transition:
    """A button on the prompt (the requester's) or on its escalation (the approvers'):
    nobody else answers, and only the requester says "not mine"."""
    mine = who.user == record.requester
    if not mine and not who.is_approver:
        raise TransitionRefused(
            f"Only the requester of {record.id} or an approver can answer this."
        )
    if not mine and choice is CleanupChoice.NOT_MINE:
        raise TransitionRefused(
            f"Only the requester of {record.id} can say it is not theirs. As an approver, "
            "choose Clean up now or Keep for a day."
        )
    if record.state is State.CLEANED_UP:
        raise TransitionRefused("Already cleaned up: nothing tagged for it is left.")
    if record.state is not State.EXPIRED:
        raise TransitionRefused(f"Request {record.id} has not ended; there is nothing to clean up.")
    try:
        prompt = answer(record.cleanup or CleanupPrompt(), choice, who.user, now)
    except AnswerRefused as exc:
        raise TransitionRefused(str(exc).capitalize() + ".") from exc
    return moved(record, on.CleanupAnswered(), cleanup=prompt)
