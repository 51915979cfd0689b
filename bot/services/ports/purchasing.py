"""Buying and following reservations, as the purchase service sees AWS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from bot.domain.comparison import OptionKind
from bot.domain.market import Offering
from bot.domain.purchase import BlockInUse
from bot.domain.records import Reservation
from bot.domain.request import CapacityRequest


class PurchaseProblem(StrEnum):
    """Why AWS refused, in the terms the service decides on."""

    INSUFFICIENT_CAPACITY = "insufficient-capacity"
    OFFERING_GONE = "offering-gone"
    INSTANCE_LIMIT = "instance-limit"
    THROTTLED = "throttled"  # still throttled after the client's own retries
    ACCESS_DENIED = "access-denied"
    NAME_TAKEN = "name-taken"  # a training plan of that name exists and is not ours
    REJECTED = "rejected"  # any other refusal: AWS answered, nothing was bought
    UNAVAILABLE = "unavailable"  # a lookup before buying got no answer: try again later
    OUTCOME_UNKNOWN = "outcome-unknown"  # no answer (timeout, 5xx): it may have been bought


class PurchaseError(Exception):
    def __init__(
        self, problem: PurchaseProblem, code: str, message: str, action: str | None = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.problem = problem
        self.code = code
        self.message = message
        self.action = action  # the IAM action missing, for ACCESS_DENIED


@dataclass(frozen=True)
class Order:
    """One purchase: what to buy, where, and how AWS will let us find it again."""

    kind: OptionKind
    account: str
    region: str
    instance_type: str
    count: int
    start: datetime
    end: datetime
    offering_id: str | None  # capacity blocks and training plans
    token: str  # the plan name, the ODCR client token, or the request id (block tag)
    fee_usd: float | None = None  # the upfront fee as re-checked just before buying
    tags: Mapping[str, str] = field(default_factory=dict)
    # An ODCR asked now for its window's start (a future-dated Capacity Reservation).
    start_ahead: bool = False


class Purchaser(Protocol):
    def accounts(self) -> Sequence[str]:
        """The account names the bot buys in (the default one first)."""
        ...

    def current_offering(
        self, account: str, request: CapacityRequest, approved: Offering
    ) -> Offering | None:
        """The approved offering as AWS offers it now (same id), or None if gone."""
        ...

    def dry_run(self, order: Order) -> None:
        """Check permission to buy without buying; `PurchaseError` when refused."""
        ...

    def buy(self, order: Order) -> Reservation:
        """Buy; `PurchaseError` says why not (OUTCOME_UNKNOWN: it may have happened)."""
        ...

    def find(self, order: Order) -> Reservation | None:
        """What an earlier attempt with this order bought, looked up by its tag, plan
        name or token; None when AWS holds nothing for it."""
        ...

    def refresh(self, reservation: Reservation) -> Reservation:
        """The reservation as AWS reports it now."""
        ...

    def blocks_in_use(self, regions: Sequence[str]) -> list[BlockInUse]:
        """Every Capacity Block AWS reports in these regions of every account."""
        ...

    def bought(
        self, account: str, regions: Sequence[str], namespace: str
    ) -> list[tuple[str | None, Reservation]]:
        """What AWS holds that this bot bought (by tag or plan-name prefix), with the
        request id it was bought for (None when the tag is missing)."""
        ...
