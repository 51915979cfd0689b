"""What is left after a reservation ends, what it costs, and where its cleanup prompt stands.

After the end the requester is asked to clean up, with three answers: Clean up now, Keep
for a day, Not mine. A prompt nobody answers is repeated, then escalated to the approval
channel. Cleaning up is verified: the prompt is resolved only when nothing tagged for the
request is left (a fresh inventory is empty), never because a delete call returned.

Only what carries the request's tag is ours to delete. Whatever else is found beside it (an
untagged instance running in the request's reservation, an endpoint someone else put on
its plan) is shown as "not ours, left alone", never priced as ours, never deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

REPEAT_AFTER = timedelta(hours=12)  # an unanswered prompt is sent again after this
PROMPTS_BEFORE_ESCALATION = 3  # the first prompt and two repeats, then the approvers hear
KEEP_FOR = timedelta(days=1)  # "Keep for a day"
VERIFY_AFTER = timedelta(minutes=2)  # deletes take a while: look again after this


class LeftoverKind(StrEnum):
    CAPACITY_RESERVATION = "capacity-reservation"  # an ODCR: billed until cancelled
    INSTANCE = "instance"  # running in the reservation or tagged for the request
    INFERENCE_COMPONENT = "inference-component"
    ENDPOINT = "endpoint"
    ENDPOINT_CONFIG = "endpoint-config"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    LeftoverKind.CAPACITY_RESERVATION: "On-Demand Capacity Reservation",
    LeftoverKind.INSTANCE: "instance",
    LeftoverKind.INFERENCE_COMPONENT: "inference component",
    LeftoverKind.ENDPOINT: "endpoint",
    LeftoverKind.ENDPOINT_CONFIG: "endpoint config",
}
# Deleting in this order never trips over a dependency: components live on endpoints,
# endpoints use configs; instances leave a reservation before it is cancelled.
CLEANUP_ORDER = (
    LeftoverKind.INFERENCE_COMPONENT,
    LeftoverKind.ENDPOINT,
    LeftoverKind.ENDPOINT_CONFIG,
    LeftoverKind.INSTANCE,
    LeftoverKind.CAPACITY_RESERVATION,
)


@dataclass(frozen=True)
class Leftover:
    kind: LeftoverKind
    id: str  # instance id, reservation id, endpoint name, ...
    region: str
    usd_per_hour: float | None = None  # None: costs nothing, or no known price
    note: str = ""  # e.g. "the plan it runs on has expired: it no longer serves"
    ours: bool = True  # carries the request's tag; False: found beside it, left alone


@dataclass(frozen=True)
class Inventory:
    """Everything found for one request at `checked_at`: `items` are the request's (tagged
    for it), `not_ours` what was found beside them and is left alone."""

    items: tuple[Leftover, ...]
    checked_at: datetime
    not_ours: tuple[Leftover, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.items

    @property
    def usd_per_hour(self) -> float:
        return sum(item.usd_per_hour or 0.0 for item in self.items)

    @property
    def usd_per_day(self) -> float:
        return self.usd_per_hour * 24

    def in_cleanup_order(self) -> list[Leftover]:
        return sorted(self.items, key=lambda item: CLEANUP_ORDER.index(item.kind))


def inventory(items: Iterable[Leftover], checked_at: datetime) -> Inventory:
    """One entry per resource even if several searches found it; a resource found as
    ours by any search is ours."""
    unique: dict[tuple[LeftoverKind, str, str], Leftover] = {}
    for item in items:
        key = (item.kind, item.region, item.id)
        if key not in unique or item.ours:
            unique[key] = item
    ours = tuple(i for i in unique.values() if i.ours)
    others = tuple(i for i in unique.values() if not i.ours)
    return Inventory(ours, checked_at, others)


class PromptStatus(StrEnum):
    OPEN = "open"  # asked, waiting for an answer
    KEPT = "kept"  # "Keep for a day": asked again later
    CLEANING = "cleaning"  # "Clean up now": deleting, then verifying
    DISOWNED = "disowned"  # "Not mine": the approvers are asked instead
    RESOLVED = "resolved"  # verified: nothing tagged for the request is left

    @property
    def final(self) -> bool:
        return self is PromptStatus.RESOLVED


class CleanupChoice(StrEnum):
    CLEAN_UP = "clean-up"
    KEEP = "keep"
    NOT_MINE = "not-mine"


class CleanupPrompt(BaseModel):
    """Stored on the request (CapacityRecord.cleanup)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: PromptStatus = PromptStatus.OPEN
    prompts: int = 0  # how many times the requester was asked since the last answer
    sent: int = 0  # messages sent about it, ever: numbers each one's delivery key
    escalated: bool = False  # the approval channel was told
    next_at: datetime | None = None  # when the prompt job runs next
    answered_by: str | None = None
    usd_per_hour: float = 0.0  # at the last look


def waits_for_approvers(prompt: CleanupPrompt | None) -> bool:
    """Leftovers handed to the approvers (the requester did not answer, or said "Not
    mine") that nobody has cleaned up or kept since."""
    if prompt is None or not prompt.escalated:
        return False
    return prompt.status in (PromptStatus.OPEN, PromptStatus.DISOWNED)


class Step(StrEnum):
    RESOLVE = "resolve"  # nothing left: done
    PROMPT = "prompt"  # ask the requester (again)
    ESCALATE = "escalate"  # tell the approval channel
    DELETE = "delete"  # "Clean up now": delete what is left
    WAIT = "wait"  # not yet: run again at `next_at`


@dataclass(frozen=True)
class Plan:
    step: Step
    prompt: CleanupPrompt  # the prompt after the step


def next_step(prompt: CleanupPrompt, found: Inventory, now: datetime) -> Plan:
    """What the prompt job does when it runs at `now`, having looked at `found`."""
    if prompt.status.final:
        return Plan(Step.WAIT, prompt)
    if found.empty:
        return Plan(Step.RESOLVE, _with(prompt, status=PromptStatus.RESOLVED, next_at=None))
    cost = found.usd_per_hour
    if prompt.next_at is not None and now < prompt.next_at:
        return Plan(Step.WAIT, prompt)
    if prompt.status is PromptStatus.CLEANING:
        # Something is still there after a delete pass: delete again, look again later.
        return Plan(Step.DELETE, _with(prompt, next_at=now + VERIFY_AFTER, usd_per_hour=cost))
    if prompt.status is PromptStatus.DISOWNED or prompt.prompts >= PROMPTS_BEFORE_ESCALATION:
        # Escalated once; then only look again now and then, to resolve it when empty.
        later = now + REPEAT_AFTER
        if prompt.escalated:
            return Plan(Step.WAIT, _with(prompt, next_at=later, usd_per_hour=cost))
        escalated = _with(
            prompt, escalated=True, next_at=later, usd_per_hour=cost, sent=prompt.sent + 1
        )
        return Plan(Step.ESCALATE, escalated)
    return Plan(
        Step.PROMPT,
        _with(
            prompt,
            status=PromptStatus.OPEN,
            prompts=prompt.prompts + 1,
            sent=prompt.sent + 1,
            next_at=now + REPEAT_AFTER,
            usd_per_hour=cost,
        ),
    )


class AnswerRefused(ValueError):
    pass


def answer(prompt: CleanupPrompt, choice: CleanupChoice, user: str, now: datetime) -> CleanupPrompt:
    """The prompt after a button press; the job then runs at the new `next_at`."""
    if prompt.status.final:
        raise AnswerRefused("already cleaned up: nothing is left")
    if choice is CleanupChoice.CLEAN_UP:
        return _with(prompt, status=PromptStatus.CLEANING, next_at=now, answered_by=user)
    if choice is CleanupChoice.KEEP:
        # Asked again in a day; the count starts over so keeping is not escalated.
        return _with(
            prompt, status=PromptStatus.KEPT, prompts=0, next_at=now + KEEP_FOR, answered_by=user
        )
    return _with(prompt, status=PromptStatus.DISOWNED, next_at=now, answered_by=user)


def _with(prompt: CleanupPrompt, **changes: Any) -> CleanupPrompt:
    return prompt.model_copy(update=changes)
