"""Scarcity and faults the market can be told to show. All off by default: every valid
request then finds offerings, and every call answers at once."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from aws_sandbox.market_moves import MarketMoves


class PurchaseFailure(StrEnum):
    """Ways a purchase call can be made to fail (after its dry run, except access)."""

    INSUFFICIENT_CAPACITY = "insufficient-capacity"
    OFFERING_GONE = "offering-gone"
    INSTANCE_LIMIT = "instance-limit"
    ACCESS_DENIED = "access-denied"  # the dry run fails too, as it would in AWS


class AnswerFault(StrEnum):
    """What can happen to an answer after the market acted on the call: the call took
    effect (a purchase is made), but the caller hears a timeout, a reset connection or a
    server error instead, as from AWS when a network or a front end fails mid-answer."""

    READ_TIMEOUT = "read-timeout"
    CONNECTION_RESET = "connection-reset"
    SERVER_ERROR = "server-error"


class Hold:
    """Calls of one operation (dry runs aside) wait here until released: an answer that
    is slow to come (the call has reached AWS; what it does happens when it is
    released)."""

    def __init__(self, timeout: float = 30.0) -> None:
        self.reached = threading.Event()  # set when a call arrives and starts waiting
        self._released = threading.Event()
        self._timeout = timeout

    def release(self) -> None:
        self._released.set()

    def wait(self) -> None:
        self.reached.set()
        self._released.wait(self._timeout)


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
        # How long an extension bought now stays payment-pending (AWS: up to 12 hours; the
        # sandbox settles at once unless a test or the shell asks for a wait).
        self.extension_payment_delay = timedelta(0)
        # Future-dated Capacity Reservations: how long AWS assesses one, and whether it
        # declines (unsupported) those asked while set (future_reservations.py).
        self.future_assessment = timedelta(hours=1)
        self.future_reservations_declined = False
        self.latency_ms = 0  # slept before every answered call
        self.price_factor = 1.0  # every fee is multiplied by this ("the price moved")
        self._sold_out: list[_SoldOut] = []
        self._zones_without: set[tuple[str, str | None]] = set()
        self._caps: dict[str | None, int] = {}
        self._throttles: dict[str | None, int] = {}
        self._purchase_failures: list[PurchaseFailure] = []
        self._answer_faults: dict[str, list[AnswerFault]] = {}
        self._lags: dict[str, list[timedelta]] = {}
        self._holds: dict[str, Hold] = {}
        self._empty_pages: dict[str, int] = {}
        # Offerings as AWS may send them (their fields are optional in the models):
        self.fee_currency = "USD"  # the CurrencyCode every fee is quoted in
        self._fees_left_out: set[str] = set()  # operations whose offerings carry no UpfrontFee
        self.moves = MarketMoves()  # others buying and releasing; `market take/release`
        self._lock = threading.Lock()

    def sell_out(self, start: datetime, end: datetime, instance_type: str | None = None) -> None:
        """No offering overlapping [start, end) for this type (or any type when None)."""
        with self._lock:
            self._sold_out.append(_SoldOut(start, end, _key(instance_type)))

    def no_capacity_in(self, zone: str, instance_type: str | None = None) -> None:
        """On-Demand capacity in this Availability Zone is used up for this type (any type
        when None): a Capacity Reservation asked there fails with InsufficientInstanceCapacity,
        while the region's other zones may still have room."""
        with self._lock:
            self._zones_without.add((zone, _key(instance_type)))

    def zone_has_capacity(self, zone: str, instance_type: str) -> bool:
        with self._lock:
            return not any(
                (zone, key) in self._zones_without for key in (None, _key(instance_type))
            )

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

    def lose_answers(
        self,
        operation: str,
        fault: AnswerFault,
        calls: int = 1,
        shown_after: timedelta = timedelta(0),
    ) -> None:
        """The next `calls` calls of `operation` (dry runs aside) take effect, and then
        their answer is lost this way (see AnswerFault). What they bought shows in
        AWS's describes only `shown_after` later (AWS's reads are eventually consistent:
        a purchase can be missing from them for a while)."""
        with self._lock:
            self._answer_faults.setdefault(operation, []).extend([fault] * calls)
            self._lags.setdefault(operation, []).extend([shown_after] * calls)

    def take_answer_fault(self, operation: str) -> AnswerFault | None:
        with self._lock:
            faults = self._answer_faults.get(operation)
            return faults.pop(0) if faults else None

    def take_lag(self, operation: str) -> timedelta:
        """How long what this call makes stays out of describes (0 unless arranged)."""
        with self._lock:
            lags = self._lags.get(operation)
            return lags.pop(0) if lags else timedelta(0)

    def hold(self, operation: str) -> Hold:
        """Make the next calls of `operation` wait until the returned hold is released."""
        with self._lock:
            self._holds[operation] = hold = Hold()
            return hold

    def held(self, operation: str) -> Hold | None:
        with self._lock:
            return self._holds.get(operation)

    def empty_pages(self, operation: str, pages: int = 1) -> None:
        """The next `pages` pages `operation` answers hold nothing but a NextToken: AWS may
        answer fewer results than MaxResults, none at all, while more follow (EC2 API
        Reference, "Pagination": https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Query-Requests.html#api-pagination)."""
        with self._lock:
            self._empty_pages[operation] = pages

    def take_empty_page(self, operation: str) -> bool:
        with self._lock:
            if self._empty_pages.get(operation, 0) > 0:
                self._empty_pages[operation] -= 1
                return True
            return False

    def leave_out_fees(self, operation: str) -> None:
        """Offerings answered by `operation` come without UpfrontFee."""
        with self._lock:
            self._fees_left_out.add(operation)

    def as_sent(self, operation: str, value: object) -> object:
        """An answer with the fee quirks applied (currency, fees left out)."""
        with self._lock:
            drop = operation in self._fees_left_out
        return _quirked(value, self.fee_currency, drop)

    def take_purchase_failure(self, dry_run: bool) -> PurchaseFailure | None:
        """The failure this purchase call meets, if any; a dry run meets only access."""
        with self._lock:
            if not self._purchase_failures:
                return None
            failure = self._purchase_failures[0]
            if dry_run and failure is not PurchaseFailure.ACCESS_DENIED:
                return None
            return self._purchase_failures.pop(0)

    def available(
        self,
        instance_type: str,
        start: datetime,
        end: datetime,
        count: int,
        region: str | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Whether an offering can be had; with `region` and `now`, as the market's
        moves say (see market_moves.py): released beats a take, churn and a sell-out."""
        opened = self.moves.open(instance_type, region, start, end, now)
        if opened is False:
            return False
        key = _key(instance_type)
        with self._lock:
            caps = [cap for k, cap in self._caps.items() if k in (None, key)]
            if caps and count > min(caps):
                return False
            if opened:
                return True
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


def _quirked(value: object, currency: str, drop_fees: bool) -> object:
    if isinstance(value, dict):
        out = {k: _quirked(v, currency, drop_fees) for k, v in value.items()}
        if "CurrencyCode" in out:
            out["CurrencyCode"] = currency
        if drop_fees:
            out.pop("UpfrontFee", None)
        return out
    if isinstance(value, list):
        return [_quirked(v, currency, drop_fees) for v in value]
    return value
