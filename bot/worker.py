"""The job worker: claims due jobs with a lease and runs them. Any number of workers may
run (in `gpu-bot serve` or as `gpu-bot worker`); a job whose worker dies comes back when
its lease runs out, so handlers must be idempotent (they are compare-and-sets)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot.services.container import Services
from bot.services.ports import ClaimedJob

log = logging.getLogger(__name__)
# Longer than the slowest job (a live quote with retries) so a healthy worker keeps it.
LEASE = timedelta(minutes=5)
MAX_ATTEMPTS = 8  # then the job goes to the dead-letter hash for an operator


def backoff(attempt: int) -> timedelta:
    """30 s, 1 min, 2 min, ... at most an hour between attempts."""
    seconds: int = 30 * 2 ** (attempt - 1)
    return min(timedelta(seconds=seconds), timedelta(hours=1))


JobHandler = Callable[[dict[str, Any]], object]


class Worker:
    def __init__(self, services: Services, lease: timedelta = LEASE, batch: int = 20) -> None:
        """`batch`: how many jobs one `run_once` may run; each is claimed (and leased)
        only when its turn comes, so a slow job cannot make the next one's lease run out."""
        self.services = services
        self.lease = lease
        self.batch = batch
        requests = services.requests
        self.handlers: dict[str, JobHandler] = {
            "notify": lambda p: services.notifications.deliver(str(p["request"])),
            "quote-only": requests.run_quote_only,
            "quote": lambda p: requests.run_quote(str(p["request"]), p.get("response_url") or None),
            "timeout": lambda p: requests.time_out(str(p["request"])),
        }

    def run_once(self) -> int:
        """Claim and run what is due now, one job at a time; returns how many ran."""
        store = self.services.store
        ran = 0
        while ran < self.batch:
            jobs = store.claim_due(self.services.clock.now(), self.lease, limit=1)
            if not jobs:
                break
            self._run(jobs[0])
            ran += 1
        return ran

    def _run(self, job: ClaimedJob) -> None:
        kind = job.id.split(":", 1)[0]
        handler = self.handlers.get(kind)
        if handler is None:
            log.error("no handler for job %s: dropped", job.id)
            self.services.store.ack(job)
            return
        store = self.services.store
        try:
            handler(job.payload)
        except Exception as exc:
            attempt = int(job.payload.get("attempt", 0)) + 1
            now = self.services.clock.now()
            if attempt >= MAX_ATTEMPTS:
                log.exception("job %s failed %d times: given up", job.id, attempt)
                store.bury(job, f"{type(exc).__name__}: {exc}", now)
                return
            log.exception("job %s failed (attempt %d); retrying", job.id, attempt)
            store.retry(job, now + backoff(attempt), job.payload | {"attempt": attempt})
            return
        if not store.ack(job):
            log.warning("job %s outlived its lease; another worker may run it again", job.id)

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
