"""A tracked request: the request, its quote, the chosen option, and who did what."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from bot.domain.budgets import BudgetCheck
from bot.domain.cleanup import CleanupPrompt
from bot.domain.comparison import Option, OptionKind
from bot.domain.decisions import Approval, Rejection
from bot.domain.extension import Extension
from bot.domain.lifecycle import State
from bot.domain.market import Offering
from bot.domain.money import LedgerEntry, Money
from bot.domain.recommendation import Quote
from bot.domain.request import CapacityRequest
from bot.domain.utilisation import Usage


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Choice(_Frozen):
    """What the requester picked: an option, and for reserved kinds one offering."""

    kind: OptionKind
    offering_id: str | None = None
    total_usd: float  # expected, at the requester's utilisation estimate
    most_usd: float | None = None  # at 100% of the window (None: chosen before it was kept)


DEFAULT_ACCOUNT = "default"  # the bot's own credentials, when no account is named


class Reservation(_Frozen):
    """What AWS holds for a request, as AWS last reported it.

    `kind` is the option bought (capacity block, training plan, On-Demand Capacity
    Reservation); `id` is the capacity reservation id or the training plan ARN; `state`
    is AWS's own word ("payment-pending", "scheduled", "Active", ...), see
    `bot.domain.purchase.lifecycle_state` for what it means for the request.
    """

    kind: OptionKind
    id: str
    account: str = DEFAULT_ACCOUNT
    region: str
    availability_zone: str | None = None
    instance_type: str
    instances: int
    start: datetime
    end: datetime
    fee_usd: float | None = None  # the upfront fee AWS charged (None: nothing upfront)
    state: str
    state_reason: str = ""  # AWS's reason for a failed or payment-failed state
    checked_at: datetime | None = None  # when AWS last told us


class PurchaseAttempt(_Frozen):
    """One try at buying, recorded on the request before any AWS call, and marked sent
    just before its purchase call, so that a request found in `purchasing` after a crash
    is reconciled (looked for in AWS) when its call may have gone out and never bought
    again blindly, and tried anew when it surely did not."""

    at: datetime
    kind: OptionKind
    offering_id: str | None
    account: str = DEFAULT_ACCOUNT
    region: str
    approved_usd: float  # the fee the approvers saw: the purchase may not cost more
    # Who may reconcile: past this moment the worker that made the attempt is presumed gone.
    lease_until: datetime
    # The idempotency handle AWS sees: the tag value, plan name or client token.
    token: str
    # Why AWS refused this attempt, when it surely bought nothing ("" when not refused).
    refused: str = ""
    # An ODCR asked at approval as a future-dated Capacity Reservation (StartDate): fixed
    # per attempt, so a re-send or a reconcile asks exactly what was asked.
    start_ahead: bool = False
    # When its purchase call went out, written just before it is sent (`marks_sending`:
    # this attempt records that moment). One marked but not sent surely bought nothing
    # and is tried anew; any other is reconciled, never bought again. Attempts recorded
    # before the mark existed carry neither field and count as maybe sent.
    marks_sending: bool = False
    sent_at: datetime | None = None

    @property
    def never_sent(self) -> bool:
        """Its purchase call surely never left: nothing can have been bought by it."""
        return self.marks_sending and self.sent_at is None


class SlackMessage(_Frozen):
    channel: str
    ts: str


class CapacityRecord(_Frozen):
    id: str
    state: State
    version: int = 0
    requester: str  # Slack user id
    created_at: datetime
    updated_at: datetime
    request: CapacityRequest
    text: str  # canonical request text
    quote: Quote | None = None
    choice: Choice | None = None
    reason: str = ""
    required_approvals: int = 1
    approvals: tuple[Approval, ...] = ()
    rejection: Rejection | None = None
    approval_deadline: datetime | None = None
    approval_message: SlackMessage | None = None
    failure: str | None = None
    attempts: tuple[PurchaseAttempt, ...] = ()  # oldest first
    reservation: Reservation | None = None
    extension: Extension | None = None  # the latest extension asked for
    extended_usd: float = 0.0  # the fees of every extension bought (in the reservation's fee)
    cleanup: CleanupPrompt | None = None  # after the end: the cleanup prompt
    usage: Usage | None = None  # measured while the reservation bills (None: not yet)
    team: str | None = None  # GPU_BOT_TEAMS' name for it (None: the requester is the team)
    budget: BudgetCheck | None = None  # the team's month, as the approvers were shown it
    # Its money as kept (bot/domain/money.py): each entry written with the change that
    # caused it; every place that shows money reads `money`, never works it out again.
    ledger: tuple[LedgerEntry, ...] = ()

    @property
    def team_name(self) -> str:
        return self.team or self.requester

    @property
    def attempt(self) -> PurchaseAttempt | None:
        """The latest purchase attempt, if any."""
        return self.attempts[-1] if self.attempts else None

    @property
    def chosen_option(self) -> Option | None:
        if self.quote is None or self.choice is None:
            return None
        return self.quote.option(self.choice.kind)

    @property
    def chosen_offering(self) -> Offering | None:
        option = self.chosen_option
        if option is None or self.choice is None or self.choice.offering_id is None:
            return None
        for offering in (option.offering, *option.alternatives):
            if offering is not None and offering.offering_id == self.choice.offering_id:
                return offering
        return None

    @property
    def total_usd(self) -> float | None:
        return self.choice.total_usd if self.choice else None

    @property
    def window(self) -> tuple[datetime, datetime]:
        """Where the request stands now: what AWS holds (an extension moves its end),
        else the offering chosen, else the window asked for."""
        if self.reservation is not None:
            return self.reservation.start, self.reservation.end
        offering = self.chosen_offering
        if offering is not None:
            return offering.start, offering.end
        return self.request.start, self.request.end

    @property
    def money(self) -> Money:
        """Held, paid and released, summed from the ledger."""
        return Money.of(self.ledger)

    @property
    def most_usd(self) -> float | None:
        """The most the chosen option can cost (the expected total for older records)."""
        if self.choice is None:
            return None
        return self.choice.most_usd if self.choice.most_usd is not None else self.choice.total_usd

    @property
    def approvers(self) -> list[str]:
        return [a.user for a in self.approvals]
