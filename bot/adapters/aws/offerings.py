"""What the reserved-offering searches share: the window searched around the wanted start,
the answer of one search (`Found`, with a line for each offering left out), and reading
the fields and the upfront fee of one offering."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from bot.domain.market import Offering

log = logging.getLogger(__name__)

# How far around the wanted start to look for reserved offerings.
START_SLACK = timedelta(days=1)


END_SLACK = timedelta(days=2)


# Fees are compared in dollars; an offering priced in anything else is left out, not summed.
CURRENCY = "USD"


class SkipOffering(Exception):
    """One offering cannot be read or compared; the message says why."""


class Found(list[Offering]):
    """Offerings read from one search, and `skipped`: a line for each one left out;
    `asked` is False when AWS was not asked (the request is not one the kind sells)."""

    def __init__(
        self,
        offerings: list[Offering] | None = None,
        skipped: list[str] | None = None,
        asked: bool = True,
    ):
        super().__init__(offerings or [])
        self.skipped = tuple(skipped or ())
        self.asked = asked


def read_all(raws: list[Any], read: Callable[[Any], Offering], label: str, id_field: str) -> Found:
    offerings: list[Offering] = []
    skipped: list[str] = []
    for raw in raws:
        try:
            offerings.append(read(raw))
        except SkipOffering as exc:
            name = raw.get(id_field) if isinstance(raw, dict) else None
            skipped.append(f"left out {label} offering {name or '(no id)'}: {exc}")
            log.warning("%s offering %s left out: %s", label, name, exc)
    return Found(offerings, skipped)


def required(raw: dict[str, Any], field: str) -> Any:
    value = raw.get(field)
    if value is None or value == "":
        raise SkipOffering(f"AWS sent no {field}")
    return value


def upfront_fee(raw: dict[str, Any]) -> tuple[float, str]:
    """The upfront fee in USD, or `SkipOffering`: a fee in another currency is not summed.
    The same reading for offerings and for extension offerings."""
    text = required(raw, "UpfrontFee")
    try:
        fee = Decimal(str(text))
    except InvalidOperation:
        raise SkipOffering(f"UpfrontFee {text!r} is not a number") from None
    if not fee.is_finite() or fee <= 0:
        raise SkipOffering(f"UpfrontFee {text!r} is not a price")
    currency = str(raw.get("CurrencyCode") or CURRENCY).upper()
    if currency != CURRENCY:
        raise SkipOffering(f"priced in {currency}; only {CURRENCY} fees are compared")
    return float(fee), currency
