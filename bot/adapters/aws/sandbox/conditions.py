"""Scarcity and faults the market can be told to show. All off by default: every valid
request then finds offerings, and every call answers at once."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class PurchaseFailure(StrEnum):
    """Ways a purchase call can be made to fail (after its dry run, except access)."""

    INSUFFICIENT_CAPACITY = "insufficient-capacity"
    OFFERING_GONE = "offering-gone"
    INSTANCE_LIMIT = "instance-limit"
    ACCESS_DENIED = "access-denied"  # the dry run fails too, as it would in AWS


@dataclass(frozen=True)
class _SoldOut:
    start: datetime
    end: datetime
    instance_type: str | None


def _key(instance_type: str | None) -> str | None:
    # One stock for both markets: ml.p5.48xlarge is the p5.48xlarge capacity.
    return None if instance_type is None else instance_type.lower().removeprefix("ml.")


class MarketConditions:
    """Switches for tests, the shell and benchmarks. Thread-safe."""

    def __init__(self) -> None:
        self.payments_fail = False  # purchases made while set end in payment-failed / Failed
        self.latency_ms = 0  # slept before every answered call
        self.price_factor = 1.0  # every fee is multiplied by this ("the price moved")
        self._sold_out: list[_SoldOut] = []
        self._caps: dict[str | None, int] = {}
        self._throttles: dict[str | None, int] = {}
        self._purchase_failures: list[PurchaseFailure] = []
        self._lock = threading.Lock()

    def sell_out(self, start: datetime, end: datetime, instance_type: str | None = None) -> None:
        """No offering overlapping [start, end) for this type (or any type when None)."""
        with self._lock:
            self._sold_out.append(_SoldOut(start, end, _key(instance_type)))

    def cap_instances(self, max_instances: int, instance_type: str | None = None) -> None:
        """At most this many instances per offering; a larger request finds nothing."""
        with self._lock:
            self._caps[_key(instance_type)] = max_instances

    def throttle(self, calls: int, operation: str | None = None) -> None:
        """Fail the next `calls` calls of `operation` (any answered operation when None)."""
        with self._lock:
            self._throttles[operation] = calls

    def fail_purchases(self, failure: PurchaseFailure, calls: int = 1) -> None:
        """Fail the next `calls` purchase calls (block, plan or reservation) this way."""
        with self._lock:
            self._purchase_failures.extend([failure] * calls)

    def take_purchase_failure(self, dry_run: bool) -> PurchaseFailure | None:
        """The failure this purchase call meets, if any; a dry run meets only access."""
        with self._lock:
            if not self._purchase_failures:
                return None
            failure = self._purchase_failures[0]
            if dry_run and failure is not PurchaseFailure.ACCESS_DENIED:
                return None
            return self._purchase_failures.pop(0)

    def available(self, instance_type: str, start: datetime, end: datetime, count: int) -> bool:
        key = _key(instance_type)
        with self._lock:
            caps = [cap for k, cap in self._caps.items() if k in (None, key)]
            if caps and count > min(caps):
                return False
            return not any(
                s.instance_type in (None, key) and s.start < end and start < s.end
                for s in self._sold_out
            )

    def take_throttle(self, operation: str) -> bool:
        """Whether this call is throttled; counts it against the switch that applies."""
        with self._lock:
            for key in (operation, None):
                if self._throttles.get(key, 0) > 0:
                    self._throttles[key] -= 1
                    return True
            return False
