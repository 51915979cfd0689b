"""What happened to a request: each transition says which of these it caused.

The events are facts, not orders: what each one causes (the jobs it schedules, those it
cancels, what is noted after it is written) is written down in one table,
bot/services/reactions.py, and applied in the same compare-and-set as the change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    """Something that happened to a request."""


# --- asking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Opened(Event):
    """A draft was made from `/gpu reserve` or the form; its comparison is shown at
    `response_url` (None: by DM)."""

    response_url: str | None = None


@dataclass(frozen=True)
class Quoted(Event):
    """The comparison is ready (the quote job shows it itself)."""


@dataclass(frozen=True)
class QuoteFailed(Event):
    pass


@dataclass(frozen=True)
class FoundByWatch(Event):
    """A watch found its offering: the request is made quoted, that offering pinned
    (the watch's message shows it)."""


@dataclass(frozen=True)
class Submitted(Event):
    """Put to the approvers, with a deadline."""


@dataclass(frozen=True)
class Cancelled(Event):
    pass


@dataclass(frozen=True)
class TimedOut(Event):
    """Nobody decided before the deadline."""


# --- deciding ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalRecorded(Event):
    """One approval of the two a large request needs."""


@dataclass(frozen=True)
class Approved(Event):
    """The last approval needed: the purchase hand-off."""


@dataclass(frozen=True)
class Rejected(Event):
    pass


# --- buying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowScheduled(Event):
    """On-Demand or Spot: nothing to buy, the request runs in its window."""


@dataclass(frozen=True)
class PurchaseStarted(Event):
    """An attempt was claimed, before any AWS call."""


@dataclass(frozen=True)
class PurchaseSent(Event):
    """The attempt's purchase call is about to go out: from now it may have bought."""


@dataclass(frozen=True)
class PurchaseRetrying(Event):
    """AWS throttled the attempt or could not be asked: nothing bought, tried again."""


@dataclass(frozen=True)
class Bought(Event):
    """AWS returned the reservation, or it was found by reconciling."""


@dataclass(frozen=True)
class PurchaseUnknown(Event):
    """The outcome of a purchase call is not known: looked for, never bought again."""


@dataclass(frozen=True)
class Requoted(Event):
    """Nothing was bought (the offering went, the fee rose): quoted again to submit."""


@dataclass(frozen=True)
class PurchaseFailed(Event):
    pass


@dataclass(frozen=True)
class MarkedFailed(Event):
    """An approver's word that an unknown purchase bought nothing."""


# --- following what was bought -------------------------------------------------------------


@dataclass(frozen=True)
class Tracked(Event):
    """What AWS says of the reservation was recorded; `moved_on`: its state changed."""

    moved_on: bool = False


@dataclass(frozen=True)
class WindowMovedOn(Event):
    """An On-Demand or Spot window opened or closed."""


# --- extensions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtensionEvent(Event):
    number: int  # which extension of the request


@dataclass(frozen=True)
class ExtensionAsked(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionCardPosted(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionApprovalRecorded(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionApproved(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionRejected(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionPurchaseStarted(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionBought(ExtensionEvent):
    """The reservation's new end is bought (or found bought)."""


@dataclass(frozen=True)
class ExtensionUnknown(ExtensionEvent):
    pass


@dataclass(frozen=True)
class ExtensionPaymentPending(ExtensionEvent):
    """AWS took the extension's order; its payment is processing (the old end stands)."""


@dataclass(frozen=True)
class ExtensionFailed(ExtensionEvent):
    pass


# --- the approval card ---------------------------------------------------------------------


@dataclass(frozen=True)
class CardPosted(Event):
    pass


@dataclass(frozen=True)
class CardRefused(Event):
    """Slack refused the approval card (a channel or a scope to fix)."""

    channel: str
    error: str


# --- after the end -------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupStepTaken(Event):
    """The cleanup prompt was sent, escalated or acted on."""


@dataclass(frozen=True)
class CleanupAnswered(Event):
    """Clean up now, Keep for a day or Not mine."""


@dataclass(frozen=True)
class CleanedUp(Event):
    """Nothing tagged for the request is left in AWS."""


# --- no change -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Noted(Event):
    """A line in the audit trail and nothing else (a dropped reminder, a refused chart,
    a deployment's progress)."""


# --- measured use --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampled(Event):
    """What runs in it was measured (the record's `usage`). `alert`: the idle step due
    now (bot.domain.sampling.IdleStep, 0 for none) for the idle stretch that began at
    `stretch`; the alert's job is written with it. `told`: the step the stretch had been
    told before (below TELL after a gap in sampling: the requester never heard of it)."""

    alert: int = 0
    stretch: str = ""
    told: int = 0


@dataclass(frozen=True)
class Released(Event):
    """An On-Demand Capacity Reservation given back before its end (Release it): it ends
    now, and what is tagged for it is cleaned up."""
