"""A request's money in words, read from its ledger (bot/domain/money.py), never worked out
again: the same figures, with the same short labels, wherever money is shown.

- "held $X": the most it can still cost, set aside from the approval;
- "paid $X": what AWS charged (with AWS's billing word while it is not settled), or
  "paid ~$X (estimate)" for On-Demand and Spot, priced from the instance-hours measured;
- "released $X": holds that stopped being owed;
- before any approval: what it would cost ("up to $X"), nothing held.
"""

from __future__ import annotations

from bot.blocks.text import usd
from bot.domain.ledger import billing
from bot.domain.lifecycle import State
from bot.domain.money import Money
from bot.domain.records import CapacityRecord

LEGEND = (
    "held: the most it can still cost, set aside from the approval · paid: what AWS "
    "charged (an estimate for On-Demand and Spot: the instance-hours measured) · released: "
    "what stopped being owed"
)
_BEFORE_APPROVAL = frozenset({State.DRAFT, State.QUOTED, State.PENDING_APPROVAL})


def paid_text(money: Money, aws_billing: str = "") -> str:
    if money.estimate:
        return f"paid ~{usd(money.paid_usd)} (estimate)"
    text = f"paid {usd(money.paid_usd)}"
    return f"{text} (AWS: {aws_billing})" if aws_billing else text


def figures(money: Money, aws_billing: str = "") -> list[str]:
    """The figures that are not zero, each with its label (paid first)."""
    parts = []
    if money.paid or money.estimate:
        parts.append(paid_text(money, aws_billing))
    if money.held:
        parts.append(f"held {usd(money.held_usd)}")
    if money.released:
        parts.append(f"released {usd(money.released_usd)}")
    return parts


def money_text(record: CapacityRecord) -> str:
    """All of a request's figures on one line ("paid $4,983.55 · released $0.00" style)."""
    money = record.money
    parts = figures(money, billing(record))
    if parts:
        return " · ".join(parts)
    if record.state in _BEFORE_APPROVAL and record.most_usd is not None:
        return f"up to {usd(record.most_usd)} if approved (nothing held yet)"
    return f"{usd(0)}: nothing held or paid"


def money_short(record: CapacityRecord) -> str:
    """The one figure a list line has room for: paid, else held, else what it would cost."""
    money = record.money
    if money.paid or money.estimate:
        return paid_text(money, billing(record))
    if money.held:
        return f"held {usd(money.held_usd)}"
    if record.state in _BEFORE_APPROVAL and record.most_usd is not None:
        return f"up to {usd(record.most_usd)}"
    return usd(0)
