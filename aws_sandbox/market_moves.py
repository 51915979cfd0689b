"""How the sandbox market moves on its own clock, and how it can be moved on purpose.

Capacity Blocks and training plans are bought by other AWS customers and released again
(AWS: "Capacity Blocks ... are available based on supply", and DescribeCapacityBlockOfferings
answers only what is offered at the moment it is asked:
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html). The
sandbox models this with:

- churn (off by default): with `share` > 0, each offering (type, region, start day) is
  taken by someone else during each `period` of the market's clock with probability
  `share`, decided by a hash of the seed, the offering and the period: the same in every
  process, for the same seed and clock, and different from one period to the next;
- `take(type, region, start, end)`: everything of that type in that region overlapping
  the window is bought by others (region None: every region);
- `release(type, region, start, end)`: offerings of that type in that region lying in
  the window are available whatever churn or an earlier take says (the latest move on a
  window wins).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

DEFAULT_PERIOD = timedelta(hours=6)


@dataclass(frozen=True)
class _Move:
    instance_type: str
    region: str | None
    start: datetime
    end: datetime
    released: bool


def _key(instance_type: str) -> str:
    return instance_type.lower().removeprefix("ml.")


class MarketMoves:
    def __init__(self) -> None:
        self._moves: list[_Move] = []
        self._seed = 0
        self._share = 0.0
        self._period = DEFAULT_PERIOD
        self._lock = threading.Lock()

    def churn(self, share: float, seed: int = 0, period: timedelta = DEFAULT_PERIOD) -> None:
        """Each period, this share of the offerings is taken by others (0: none)."""
        if not 0 <= share <= 1:
            raise ValueError("share is a fraction from 0 to 1")
        with self._lock:
            self._share, self._seed, self._period = share, seed, period

    def take(self, instance_type: str, region: str | None, start: datetime, end: datetime) -> None:
        with self._lock:
            self._moves.append(_Move(_key(instance_type), region, start, end, released=False))

    def release(self, instance_type: str, region: str, start: datetime, end: datetime) -> None:
        with self._lock:
            self._moves.append(_Move(_key(instance_type), region, start, end, released=True))

    def open(
        self,
        instance_type: str,
        region: str | None,
        start: datetime,
        end: datetime,
        now: datetime | None,
    ) -> bool | None:
        """True: released; False: taken (by a move or churn); None: nothing says."""
        key = _key(instance_type)
        with self._lock:
            moves = list(self._moves)
            share, seed, period = self._share, self._seed, self._period
        for move in reversed(moves):
            if move.instance_type != key or (move.region not in (None, region)):
                continue
            if move.released and move.start <= start and end <= move.end:
                return True
            if not move.released and move.start < end and start < move.end:
                return False
        if share and now is not None and region is not None:
            epoch = int(now.timestamp() // period.total_seconds())
            text = f"{seed}|{key}|{region}|{start.date().isoformat()}|{epoch}"
            draw = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
            if draw < share:
                return False
        return None
