"""Scarcity and faults the market can be told to show. All off by default: every valid
request then finds offerings, and every call answers at once."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime


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
        self.price_factor = 1.0  # extension fees are multiplied by this ("the price moved")
        self._sold_out: list[_SoldOut] = []
        self._caps: dict[str | None, int] = {}
        self._throttles: dict[str | None, int] = {}
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
