"""The `Store` port (bot/services/ports/store.py) in Redis, one part per concern:
requests and their audit (requests.py), scheduled jobs (job_queue.py), caches
(caches.py) and once-only deliveries (deliveries.py).

One implementation for `redis://` and `memory://` (fakeredis runs the same commands and
Lua scripts in-process).
"""

from __future__ import annotations

from bot.adapters.store.caches import CachesInRedis
from bot.adapters.store.deliveries import DELIVERY_KEPT, DeliveriesInRedis
from bot.adapters.store.job_queue import JobQueueInRedis
from bot.adapters.store.requests import Follower, RequestsInRedis

__all__ = ["DELIVERY_KEPT", "Follower", "RedisStore"]


class RedisStore(RequestsInRedis, JobQueueInRedis, CachesInRedis, DeliveriesInRedis):
    """Requests, audit, jobs, caches and deliveries of one namespace."""
