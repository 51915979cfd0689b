"""The job worker: claims due jobs with a lease and runs them. Any number of workers may
run (in `gpu-bot serve` or as `gpu-bot worker`); a job whose worker dies comes back when
its lease runs out, so handlers must be idempotent (they are compare-and-sets)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot.adapters.store import ClaimedJob
from bot.app import Services

log = logging.getLogger(__name__)
LEASE = timedelta(minutes=2)

JobHandler = Callable[[dict[str, Any]], object]


class Worker:
    def __init__(self, services: Services, lease: timedelta = LEASE, batch: int = 20) -> None:
        self.services = services
        self.lease = lease
        self.batch = batch
        requests = services.requests
        self.handlers: dict[str, JobHandler] = {
            "quote": lambda p: requests.run_quote(str(p["request"]), p.get("response_url") or None),
            "timeout": lambda p: requests.time_out(str(p["request"])),
        }

    def run_once(self) -> int:
        """Claim and run what is due now; returns how many jobs ran."""
        store = self.services.store
        jobs = store.claim_due(self.services.clock.now(), self.lease, self.batch)
        for job in jobs:
            self._run(job)
        return len(jobs)

    def _run(self, job: ClaimedJob) -> None:
        kind = job.id.split(":", 1)[0]
        handler = self.handlers.get(kind)
        if handler is None:
            log.error("no handler for job %s: dropped", job.id)
            self.services.store.ack(job)
            return
        try:
            handler(job.payload)
        except Exception:
            # Not acked: the lease runs out and the job is tried again.
            log.exception("job %s failed; it will be retried", job.id)
            return
        self.services.store.ack(job)

    def drain(self, limit: int = 100) -> int:
        """Run jobs until none is due (tests, the shell); returns how many ran."""
        total = 0
        for _ in range(limit):
            ran = self.run_once()
            if not ran:
                break
            total += ran
        return total

    def run_forever(self, stop: threading.Event, interval: float = 1.0) -> None:
        """Poll for due jobs; between polls wait for a wake-up (a new job due now)."""
        while not stop.is_set():
            try:
                ran = self.run_once()
                if not ran:
                    self.services.store.wait_for_work(interval)
            except Exception:
                log.exception("worker loop failed; retrying")
                stop.wait(interval)

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run_forever, args=(stop,), name="worker", daemon=True)
        thread.start()
        return thread
