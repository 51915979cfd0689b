"""The `Store` port (bot/services/ports/store.py) in Redis, one part per concern:
requests and their audit (requests.py), what the ledger keeps beside them (money.py),
scheduled jobs (job_queue.py), caches
(caches.py), once-only deliveries (deliveries.py), usage samples (samples.py) and the
capacity outlook's counters (outlook.py).

One implementation for `redis://` and `memory://` (fakeredis runs the same commands and
Lua scripts in-process).
"""

from __future__ import annotations

import logging
from datetime import datetime

from bot.adapters.store.base import epoch
from bot.adapters.store.caches import CachesInRedis
from bot.adapters.store.deliveries import DELIVERY_KEPT, DeliveriesInRedis
from bot.adapters.store.job_queue import JobQueueInRedis
from bot.adapters.store.money import MoneyInRedis
from bot.adapters.store.outlook import OutlookInRedis
from bot.adapters.store.requests import RequestsInRedis
from bot.adapters.store.samples import SamplesInRedis
from bot.domain.lifecycle import State
from bot.services.ports import StoreCounts

__all__ = ["DELIVERY_KEPT", "RedisStore"]

log = logging.getLogger(__name__)


class RedisStore(
    RequestsInRedis,
    MoneyInRedis,
    JobQueueInRedis,
    CachesInRedis,
    DeliveriesInRedis,
    SamplesInRedis,
    OutlookInRedis,
):
    """Requests, audit, the ledger's indexes, jobs, caches, deliveries and usage samples
    of one namespace."""

    def counts(self, now: datetime) -> StoreCounts:
        """What the store holds now, in one round trip (for the metrics page)."""
        pipe = self.redis.pipeline(transaction=False)
        for state in State:
            pipe.scard(self.key("state", state.value))
        pipe.zcount(self.key("due"), "-inf", epoch(now))
        pipe.zcard(self.key("due"))
        pipe.zcard(self.key("inflight"))
        pipe.hlen(self.key("dead"))
        pipe.zrange(self.key("due"), 0, 0, withscores=True)
        *states, due, scheduled, in_flight, dead, oldest = pipe.execute()
        waited = max(0.0, epoch(now) - float(oldest[0][1])) if oldest else 0.0
        return StoreCounts(
            requests={s.value: int(n) for s, n in zip(State, states, strict=True)},
            jobs_due=int(due),
            jobs_scheduled=int(scheduled),
            jobs_in_flight=int(in_flight),
            jobs_dead=int(dead),
            oldest_due_seconds=waited,
        )

    def index_ledger(self, now: datetime) -> int:
        """The records written before the ledger indexed (requests.py), and the waiting
        list's per-user exclusion counts built once (money.py)."""
        counted = self.count_waiting_exclusions()
        if counted:
            log.info("waiting list: exclusions of %d entries counted", counted)
        return super().index_ledger(now)
