"""The money rules: what a request stands at (held, paid) in each state, the ledger
entries that bring it there, and what the store keeps beside it for the readers that must
not read every record (team-month totals, a month's spend rows, what waits for approvers,
what a team's closed reservations measured). Pure: `bot.services.changes` settles every
change through `settle`, and the store writes the `Projection` in the same compare-and-set.

The figures are described in bot/domain/money.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.domain.budgets import month_of
from bot.domain.cleanup import waits_for_approvers
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.money import Entry, LedgerEntry, cents
from bot.domain.records import CapacityRecord

# An approved request holds its most until it is bought (or, pay-as-you-go, until its
# window ends); nothing before the decisive approval, nothing once it went nowhere.
_HOLDS_UNTIL_BOUGHT = frozenset({State.APPROVED, State.PURCHASING, State.PURCHASE_UNKNOWN})
_WINDOW_OPEN = frozenset({State.APPROVED, State.SCHEDULED, State.ACTIVE, State.EXPIRING})
_ENDED = frozenset({State.EXPIRED, State.CLEANED_UP})
# An extension approved and not yet paid (or of unknown outcome) is held.
_EXTENSION_HELD = frozenset(
    {
        ExtensionStatus.APPROVED,
        ExtensionStatus.PURCHASING,
        ExtensionStatus.UNKNOWN,
        ExtensionStatus.PAYMENT_PENDING,
    }
)
# Nothing decided yet, or decided against: nothing held, nothing paid.
_NOTHING_OWED = frozenset(
    {
        State.DRAFT,
        State.QUOTED,
        State.PENDING_APPROVAL,
        State.REJECTED,
        State.CANCELLED,
        State.TIMED_OUT,
    }
)
PAY_AS_YOU_GO = frozenset({OptionKind.ON_DEMAND, OptionKind.SPOT})


@dataclass(frozen=True)
class Owed:
    """What a request should stand at now (cents), and the words for each figure."""

    held: int = 0
    paid: int = 0
    held_why: str = ""
    paid_why: str = ""
    estimate: bool = False


def on_demand_rate(record: CapacityRecord) -> float | None:
    """The On-Demand price of one instance-hour the request was quoted at."""
    return _rate(record, OptionKind.ON_DEMAND)


def _rate(record: CapacityRecord, kind: OptionKind) -> float | None:
    if record.quote is None:
        return None
    rate = record.quote.option(kind).hourly_usd
    return rate if rate is not None and rate > 0 else None


def _hours(start: datetime, end: datetime) -> float:
    return max((end - start).total_seconds(), 0.0) / 3600.0


def _usd(amount: float) -> str:
    return f"${amount:,.2f}"


def owed(record: CapacityRecord) -> Owed:
    """The held and paid figures the rules give the request as it is now."""
    choice = record.choice
    if choice is None:
        return Owed()
    kind, state, res = choice.kind, record.state, record.reservation
    if state in _NOTHING_OWED:
        return Owed()
    most = cents(record.most_usd)
    if kind in PAY_AS_YOU_GO:
        if state in _WINDOW_OPEN:
            return Owed(held=most, held_why="the most it can cost: the whole window at 100%")
        if state in _ENDED:
            return _measured_bill(record, kind)
        return Owed()
    base = Owed()
    if res is None:
        if state in _HOLDS_UNTIL_BOUGHT:
            base = Owed(held=most, held_why=f"the approved {kind.label}'s fee")
    elif kind is OptionKind.ON_DEMAND_RESERVATION:
        base = _reservation_hours(record)
    elif state is State.PAYMENT_PENDING:
        # AWS took the order; the fee is charged once its payment clears (it may fail).
        fee = res.fee_usd if res.fee_usd is not None else record.most_usd
        base = Owed(held=cents(fee), held_why=f"the {kind.label}'s fee until AWS says it is paid")
    elif state is not State.FAILED:
        fee = res.fee_usd if res.fee_usd is not None else record.most_usd
        why = f"the {kind.label}'s fee" + (" and its extensions" if record.extended_usd else "")
        base = Owed(paid=cents(fee), paid_why=why)
    ext = record.extension
    if ext is not None and ext.status in _EXTENSION_HELD and state not in (State.FAILED,):
        held_why = (
            f"{base.held_why}; extension {ext.number}" if base.held else f"extension {ext.number}"
        )
        return Owed(
            held=base.held + cents(ext.offer.fee_usd),
            paid=base.paid,
            held_why=held_why + " until AWS says it is paid",
            paid_why=base.paid_why,
        )
    return base


def _reservation_hours(record: CapacityRecord) -> Owed:
    """An ODCR bills its instances by the hour at the On-Demand rate from its start until
    it is released or ends: held for its whole window while it runs, paid once it ended."""
    res = record.reservation
    rate = on_demand_rate(record)
    assert res is not None
    if record.state is State.FAILED or rate is None:
        return Owed()
    hours = _hours(res.start, res.end)
    amount = cents(rate * res.instances * hours)
    how = f"{hours:,.1f} h x {res.instances} at {_usd(rate)}/instance-h"
    if record.state in _ENDED:
        return Owed(paid=amount, paid_why=f"its billed hours: {how}")
    return Owed(held=amount, held_why=f"its whole window: {how}")


def _measured_bill(record: CapacityRecord, kind: OptionKind) -> Owed:
    """On-Demand and Spot bill what ran; the bot's figure is the measured instance-hours
    at the quoted rate (Spot at its quoted price), an estimate."""
    usage = record.usage
    rate = _rate(record, kind) or on_demand_rate(record)
    if usage is None or rate is None:
        return Owed(paid=0, paid_why="nothing measured running", estimate=True)
    hours = usage.used_instance_hours
    return Owed(
        paid=cents(hours * rate),
        paid_why=f"{hours:,.1f} instance-h measured at {_usd(rate)}/instance-h (estimate)",
        estimate=True,
    )


def settle(record: CapacityRecord, now: datetime, why: str) -> CapacityRecord:
    """The record with the entry that brings its ledger to what it owes now (the record
    itself when nothing moves). `why` names the change (its audit action)."""
    target = owed(record)
    have = record.money
    held, paid = target.held - have.held, target.paid - have.paid
    if not held and not paid and target.estimate == have.estimate:
        return record
    if paid > 0:
        entry, because = Entry.PAID, target.paid_why
    elif held > 0:
        entry, because = Entry.HELD, target.held_why
    elif held < 0:
        entry, because = Entry.RELEASED, ""
    elif paid < 0:
        entry, because = Entry.VOIDED, ""
    else:
        entry, because = Entry.PAID, target.paid_why  # an estimate of $0 made
    line = LedgerEntry(
        entry=entry,
        held=held,
        paid=paid,
        at=now,
        why=f"{why}: {because}" if because else why,
        estimate=target.estimate,
    )
    return record.model_copy(update={"ledger": (*record.ledger, line)})


def billing(record: CapacityRecord) -> str:
    """AWS's word on the payment, when it has one that matters ("" otherwise)."""
    res = record.reservation
    if res is None or res.kind is OptionKind.ON_DEMAND_RESERVATION:
        return ""
    if res.state in ("payment-pending", "payment-failed"):
        return res.state.replace("-", " ")
    return ""


def measured_cents(record: CapacityRecord) -> int:
    """The instance-hours used at the On-Demand rate (0: nothing measured, or no rate)."""
    usage = record.usage
    rate = on_demand_rate(record)
    if usage is None or rate is None:
        return 0
    return cents(usage.used_instance_hours * rate)


def month_of_record(record: CapacityRecord) -> str:
    """The month a request counts in: the month (UTC) its window starts."""
    return month_of(record.window[0])


# --- what the store keeps beside a record ---------------------------------------------------

# Requests whose money shows in a month's spend report: approved and after.
REPORTED = frozenset(
    {
        State.APPROVED,
        State.PURCHASING,
        State.PURCHASE_UNKNOWN,
        State.PAYMENT_PENDING,
        State.SCHEDULED,
        State.ACTIVE,
        State.EXPIRING,
        State.EXPIRED,
        State.CLEANED_UP,
    }
)


@dataclass(frozen=True)
class SpendRow:
    """One request in a month's spend report, as kept beside it."""

    request_id: str
    team: str
    requester: str
    option: str
    state: str
    start: datetime
    held: int
    paid: int
    estimate: bool
    billing: str
    measured: int  # the hours used at the On-Demand rate (0: not measured)
    used_pct: float | None  # None: not measured

    @property
    def committed(self) -> int:
        return self.held + self.paid


@dataclass(frozen=True)
class Waiting:
    """A request in the approvers' list: why, since when (its order), and who may not
    act on it (the requester and whoever approved it already, or asked the extension)."""

    kind: str  # "request", "extension", "unknown", "extension-unknown", "leftovers"
    order: float
    excluded: tuple[str, ...]


@dataclass(frozen=True)
class Closed:
    """A reservation whose use is measured to its end: what a team's learned default
    `util` is made of."""

    start: datetime
    used_hours: float
    billed_hours: float


@dataclass(frozen=True)
class Projection:
    """What the store keeps beside a record, in the same write."""

    team: str
    month: str
    held: int
    paid: int
    asked: int  # waiting for approvers: a request's most, an extension's fee
    measured: int
    row: SpendRow | None
    waiting: Waiting | None
    closed: Closed | None


def asked_cents(record: CapacityRecord) -> int:
    """What waits for approvers to decide on it: the request's most, or an extension's fee."""
    ext = record.extension
    if record.state is State.PENDING_APPROVAL:
        return cents(record.most_usd)
    if ext is not None and ext.status is ExtensionStatus.PENDING_APPROVAL:
        return cents(ext.offer.fee_usd)
    return 0


def waiting(record: CapacityRecord, order: float) -> Waiting | None:
    """Why the request waits for approvers, if it does."""
    ext = record.extension
    if record.state is State.PENDING_APPROVAL:
        excluded = (record.requester, *record.approvers)
        return Waiting("request", order, excluded)
    if ext is not None and ext.status is ExtensionStatus.PENDING_APPROVAL:
        excluded = (record.requester, ext.requested_by, *(a.user for a in ext.approvals))
        return Waiting("extension", order, tuple(dict.fromkeys(excluded)))
    if ext is not None and ext.status is ExtensionStatus.UNKNOWN:
        return Waiting("extension-unknown", order, ())
    if record.state is State.PURCHASE_UNKNOWN:
        return Waiting("unknown", order, ())
    if waits_for_approvers(record.cleanup):
        return Waiting("leftovers", order, ())
    return None


def closed(record: CapacityRecord) -> Closed | None:
    """What an ended request measured (a reservation, or an On-Demand or Spot window)."""
    usage = record.usage
    if record.state not in _ENDED or usage is None or usage.billed_instance_hours <= 0:
        return None
    return Closed(record.window[0], usage.used_instance_hours, usage.billed_instance_hours)


def project(record: CapacityRecord, order: float) -> Projection:
    """`order`: where the request sorts among others (its number)."""
    money = record.money
    measured = measured_cents(record)
    row = None
    if record.state in REPORTED or money.committed:
        pct = record.usage.utilisation_pct if record.usage is not None else None
        row = SpendRow(
            request_id=record.id,
            team=record.team_name,
            requester=record.requester,
            option=record.choice.kind.label if record.choice else "none",
            state=record.state.value,
            start=record.window[0],
            held=money.held,
            paid=money.paid,
            estimate=money.estimate,
            billing=billing(record),
            measured=measured,
            used_pct=None if pct is None else round(pct, 1),
        )
    return Projection(
        team=record.team_name,
        month=month_of_record(record),
        held=money.held,
        paid=money.paid,
        asked=asked_cents(record),
        measured=measured,
        row=row,
        waiting=waiting(record, order),
        closed=closed(record),
    )
