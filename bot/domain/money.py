"""A request's money as kept: its ledger entries, and the figures every place that shows
money reads from them (the approval card, status, lists, App Home, the report card, the
spend report, the CLIs). Amounts are whole cents, so that sums never drift.

- *held*: the most it can still cost, set aside from the decisive approval until it is
  bought (a Capacity Block, a training plan), or until its window ends (On-Demand, Spot,
  an On-Demand Capacity Reservation, which bills by the hour); an approved extension is
  held until AWS says it is paid.
- *paid*: what AWS charged: a block's or a plan's fee and each extension's once AWS says
  paid, an ODCR's hours up to its release or end at its rate. On-Demand and Spot have no
  bill the bot sees: their paid figure is the instance-hours measured, priced, and is
  marked an estimate.
- *released*: holds that stopped being owed (bought, ended early, failed, rejected).
- *measured*: the instance-hours used at the On-Demand rate, always an estimate.

Which figures a request should stand at is `bot.domain.ledger.owed`; the ledger records
each change from one to the next as an entry, written with the transition that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Entry(StrEnum):
    """What an entry was, in one word (its amounts say what it moved)."""

    HELD = "held"  # set aside: the most it can cost
    PAID = "paid"  # charged by AWS (out of what was held), or the estimate of it
    RELEASED = "released"  # a hold that stopped being owed
    VOIDED = "voided"  # a payment AWS did not take after all (payment failed)


class LedgerEntry(BaseModel):
    """One change of a request's money, written with the transition that caused it.
    `held` and `paid` are signed cents: a purchase moves the hold into paid in one entry
    (held -fee, paid +fee); what leaves the hold without being paid is released."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entry: Entry
    held: int = 0
    paid: int = 0
    at: datetime
    why: str  # what caused it ("approved", "bought: the Capacity Block's fee", ...)
    estimate: bool = False  # a paid figure the bot priced itself (On-Demand, Spot)

    @property
    def released(self) -> int:
        """What left the hold without being paid."""
        return max(0, -self.held - max(self.paid, 0))


def cents(usd: float | None) -> int:
    """USD as whole cents (halves away from zero, as money is rounded)."""
    if usd is None:
        return 0
    scaled = abs(usd) * 100
    whole = int(scaled + 0.5 + 1e-9)
    return whole if usd >= 0 else -whole


def dollars(amount: int) -> float:
    return amount / 100


@dataclass(frozen=True)
class Money:
    """A request's figures, summed from its ledger (cents). `estimate`: its paid figure
    is the bot's own pricing of what ran (On-Demand, Spot), not AWS's bill."""

    held: int = 0
    paid: int = 0
    released: int = 0
    estimate: bool = False  # the paid figure is the bot's estimate, not AWS's bill

    @classmethod
    def of(cls, entries: tuple[LedgerEntry, ...]) -> Money:
        return cls(
            held=sum(e.held for e in entries),
            paid=sum(e.paid for e in entries),
            released=sum(e.released for e in entries),
            estimate=any(e.estimate for e in entries),
        )

    @property
    def committed(self) -> int:
        """What a budget counts: held and paid."""
        return self.held + self.paid

    @property
    def held_usd(self) -> float:
        return dollars(self.held)

    @property
    def paid_usd(self) -> float:
        return dollars(self.paid)

    @property
    def released_usd(self) -> float:
        return dollars(self.released)

    @property
    def committed_usd(self) -> float:
        return dollars(self.committed)
