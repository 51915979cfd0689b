"""AWS as the reminders see it: extensions on offer and bought, and what is left after
the end (found and deleted)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from bot.domain.cleanup import Inventory, Leftover
from bot.domain.extension import ExtensionOffer, ExtensionPayment
from bot.domain.records import CapacityRecord, Reservation


class ExtensionUnavailable(Exception):
    """AWS shows an extension that cannot be bought as it stands (no fee, a fee that is not
    a price, another currency); the message says why, for the person asking."""


class ExtensionMarket(Protocol):
    def extension_offer(self, reservation: Reservation, hours: int) -> ExtensionOffer | None:
        """What extending by `hours` costs now, or None when nothing is on offer;
        `ExtensionUnavailable` when what is on offer cannot be bought."""
        ...

    def current_end(self, reservation: Reservation) -> datetime:
        """Where AWS says the reservation ends now (an extension bought moves it)."""
        ...

    def buy_extension(self, reservation: Reservation, offer: ExtensionOffer) -> ExtensionPayment:
        """Buy `offer` (sent once); where its payment stands in AWS's answer. `PurchaseError`
        says why not (OUTCOME_UNKNOWN: it may have been bought)."""
        ...

    def extension_payment(
        self, reservation: Reservation, offer: ExtensionOffer
    ) -> ExtensionPayment | None:
        """Where AWS's extension history says the payment for `offer` stands; None when
        AWS does not list it (not bought, or not shown yet)."""
        ...


class Leftovers(Protocol):
    def find(self, record: CapacityRecord) -> Inventory:
        """Everything still there for the request: its reservation if it still bills,
        instances in it or tagged for the request, endpoints (with their configs and
        inference components) on its plan."""
        ...

    def delete(self, record: CapacityRecord, items: Sequence[Leftover]) -> None:
        """Ask AWS to remove these, in this order. Success is checked by `find` later."""
        ...
