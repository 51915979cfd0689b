"""The job worker: claims due jobs with a lease and runs them. Any number of workers may
run (in `gpu-bot serve` or as `gpu-bot worker`); a job whose worker dies comes back when
its lease runs out, so handlers must be idempotent (they are compare-and-sets).

`run_forever` claims due jobs in batches and runs them on a pool of `concurrency`
threads (jobs mostly wait on HTTP: Slack, AWS), extends the leases of the jobs it holds
while they run (a heartbeat), and acks finished jobs in batches. When told to stop it
claims nothing more, gives back the jobs it holds but has not started, lets the running
ones finish for up to `grace` seconds and gives back any still running: none is lost.

`run_once` and `drain` run due jobs one at a time in the calling thread: the
deterministic way for tests and the shell.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bot.logs import run_bound
from bot.services.container import Services
from bot.services.jobs import RetryLater, UnknownJobKind
from bot.services.ports import ClaimedJob

log = logging.getLogger(__name__)
# Leases are extended while a job runs, so this only bounds how long a dead worker's
# jobs wait before another worker takes them.
LEASE = timedelta(minutes=2)
GRACE_SECONDS = 20.0  # on stop, how long running jobs may take to finish
MAX_RETRY_WAIT_S = 60.0  # the longest wait between turns while the store fails


@dataclass(frozen=True)
class _Done:
    """A job's outcome: acked when `retry_at` and `error` are both None."""

    job: ClaimedJob
    retry_at: datetime | None = None
    attempt: int | None = None  # with retry_at: the new failure count (None: unchanged)
    error: str | None = None  # bury with this reason


class Worker:
    def __init__(
        self,
        services: Services,
        *,
        concurrency: int = 4,
        lease: timedelta = LEASE,
        batch: int = 20,
        grace: float = GRACE_SECONDS,
    ) -> None:
        """`concurrency`: jobs run at once by `run_forever`; `batch`: the most jobs one
        `run_once` runs (and how many `run_forever` claims ahead of its threads)."""
        self.store = services.store
        self.jobs = services.jobs
        self._seed = services.start_up
        self.clock = services.clock
        self.metrics = services.metrics
        self.concurrency = max(1, concurrency)
        self.lease = lease
        self.batch = max(1, batch)
        self.grace = grace
        self._held: dict[tuple[str, str], ClaimedJob] = {}  # claimed, not yet settled
        self._held_lock = threading.Lock()
        self._stopping = threading.Event()
        self._running = 0  # jobs whose handler is running on the pool
        self._outstanding = 0  # claimed by run_forever, not finished
        self._refill_at = 0  # claim again when no more than this many are outstanding
        self._room = threading.Event()  # set when outstanding falls to _refill_at

    # --- one job --------------------------------------------------------------------

    def _execute(self, job: ClaimedJob) -> _Done:
        """Run one job's handler; say what should become of the job. Its log lines carry
        the job id, and the request and user its payload names."""
        request, user = job.payload.get("request"), job.payload.get("user")
        return run_bound(
            lambda: self._counted(job),
            job_id=job.id,
            request_id=request if isinstance(request, str) else None,
            slack_user=user if isinstance(user, str) else None,
        )

    def _counted(self, job: ClaimedJob) -> _Done:
        done = self._outcome(job)
        if done.error is not None:
            outcome = "dead"
        elif done.retry_at is not None:
            outcome = "later" if done.attempt is None else "retry"
        else:
            outcome = "ok"
        self.metrics.job_finished(job.kind, outcome)
        log.debug("job %s (%s): %s", job.id, job.kind, outcome)
        return done

    def _outcome(self, job: ClaimedJob) -> _Done:
        retries = self.jobs.retries(job.kind)
        try:
            self.jobs.run(job.kind, job.payload)
        except RetryLater as later:
            if later.failed:
                attempt = job.attempt + 1
                if attempt >= retries.attempts:
                    log.error("job %s failed %d times: given up (%s)", job.id, attempt, later)
                    return _Done(job, error=later.reason)
                log.warning("job %s failed (attempt %d): %s", job.id, attempt, later.reason)
                retry_at = max(later.at, self.clock.now() + retries.wait(attempt))
                return _Done(job, retry_at=retry_at, attempt=attempt)
            log.info("job %s gives itself back until %s: %s", job.id, later.at, later.reason)
            return _Done(job, retry_at=later.at)
        except ValidationError as exc:
            # Retrying cannot make a payload valid: keep it for an operator.
            log.error("job %s has an invalid payload: buried", job.id)
            return _Done(job, error=f"invalid payload: {exc}")
        except UnknownJobKind as exc:
            # An older worker in a rolling deploy: leave the job to one that knows it.
            attempt = job.attempt + 1
            if attempt >= retries.attempts:
                log.error("job %s: %s; given up", job.id, exc)
                return _Done(job, error=str(exc))
            log.warning("job %s: %s; given back", job.id, exc)
            return _Done(job, retry_at=self.clock.now() + retries.wait(attempt), attempt=attempt)
        except Exception as exc:
            attempt = job.attempt + 1
            if attempt >= retries.attempts:
                log.exception("job %s failed %d times: given up", job.id, attempt)
                return _Done(job, error=f"{type(exc).__name__}: {exc}")
            log.exception("job %s failed (attempt %d); retrying", job.id, attempt)
            return _Done(job, retry_at=self.clock.now() + retries.wait(attempt), attempt=attempt)
        return _Done(job)

    def _settle(self, outcomes: Sequence[_Done]) -> None:
        """Release the leases: acks in one round trip, retries and burials one by one."""
        acks = [d.job for d in outcomes if d.retry_at is None and d.error is None]
        lost = [job.id for job, ok in zip(acks, self.store.ack_many(acks), strict=True) if not ok]
        for done in outcomes:
            if done.error is not None:
                released = self.store.bury(done.job, done.error, self.clock.now())
            elif done.retry_at is not None:
                released = self.store.retry(done.job, done.retry_at, done.attempt)
            else:
                continue
            if not released:
                lost.append(done.job.id)
        for job_id in lost:
            log.warning("job %s outlived its lease; another worker may run it again", job_id)
        with self._held_lock:
            for done in outcomes:
                self._held.pop((done.job.id, done.job.token), None)

    # --- synchronous runs (tests, the shell) ------------------------------------------

    def run_once(self) -> int:
        """Claim and run what is due now, one job at a time in this thread, at most
        `batch` jobs; returns how many ran."""
        ran = 0
        while ran < self.batch:
            jobs = self.store.claim_due(self.clock.now(), self.lease, limit=1)
            if not jobs:
                break
            self._settle([self._execute(jobs[0])])
            ran += 1
        return ran

    def drain(self, limit: int = 100) -> int:
        """Run jobs until none is due (tests, the shell); returns how many ran."""
        total = 0
        for _ in range(limit):
            ran = self.run_once()
            if not ran:
                break
            total += ran
        return total

    # --- the long-running loop ----------------------------------------------------------

    def run_forever(self, stop: threading.Event, interval: float = 1.0) -> None:
        """Claim and run due jobs until `stop` is set, then stop cleanly (see above).

        Up to `concurrency + batch` jobs are claimed and not yet finished; when that
        falls to `concurrency + batch / 2` the loop claims again, so the threads never
        wait for a claim. Finished jobs are acked together, at least every 50 ms."""
        self._stopping.clear()
        seeded = False  # Services.start_up: the ledger's index, the monthly summary's job
        finished: queue.SimpleQueue[_Done] = queue.SimpleQueue()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="job")
        heartbeat = threading.Thread(target=self._heartbeat, name="job-heartbeat", daemon=True)
        heartbeat.start()
        most = self.concurrency + self.batch
        self._refill_at = self.concurrency + self.batch // 2
        done: list[_Done] = []  # finished, not yet acked
        last_settle = time.monotonic()
        failures = 0  # turns failed in a row: the store (Redis) down, most likely
        try:
            while not stop.is_set():
                try:
                    if not seeded:  # in the loop: a store down at start is waited out
                        self._seed()
                        seeded = True
                    self._room.clear()
                    done += _take_all(finished)
                    with self._held_lock:
                        outstanding = self._outstanding
                    claimed: list[ClaimedJob] = []
                    wanted = most - outstanding
                    if outstanding <= self._refill_at:
                        claimed = self.store.claim_due(self.clock.now(), self.lease, wanted)
                        with self._held_lock:
                            for job in claimed:
                                self._held[(job.id, job.token)] = job
                            self._outstanding += len(claimed)
                        for job in claimed:
                            pool.submit(self._run_pooled, job, finished)
                    stale = time.monotonic() - last_settle >= 0.05
                    if done and (len(done) >= self.batch // 2 or not claimed or stale):
                        # If the store fails (Redis restarting), `done` is kept for the
                        # next turn: dropped, those jobs would stay held, their leases
                        # extended for ever. Settling twice is harmless (refused).
                        self._settle(done)
                        done, last_settle = [], time.monotonic()
                    failures = 0
                    if claimed:
                        continue
                    if outstanding:
                        # Wake when there is room to claim again, or look for newly due
                        # jobs after a while (when more were due, soon).
                        self._room.wait(min(interval, 0.25))
                    else:
                        self.store.wait_for_work(interval)
                except Exception as exc:
                    failures += 1
                    self._failed_turn(exc, failures, interval, stop)
        finally:
            self._stop(pool, finished, done)

    def _failed_turn(
        self, exc: Exception, failures: int, interval: float, stop: threading.Event
    ) -> None:
        """One line per failed turn, and a growing wait: Redis down for an hour is
        worth a line a minute, not a traceback a second. An error that is not a lost
        connection gets its traceback the first time."""
        delay = min(interval * 2 ** (failures - 1), MAX_RETRY_WAIT_S)
        if failures == 1 and not _unavailable(exc):
            log.exception("worker loop failed; trying again in %.1f s", delay)
        else:
            log.warning(
                "worker loop failed (%s: %s), %d in a row; trying again in %.1f s",
                type(exc).__name__,
                str(exc).splitlines()[0] if str(exc) else "",
                failures,
                delay,
            )
        stop.wait(delay)

    def _run_pooled(self, job: ClaimedJob, finished: queue.SimpleQueue[_Done]) -> None:
        with self._held_lock:
            if self._stopping.is_set():
                return  # not started: given back by _stop
            self._running += 1
        try:
            finished.put(self._execute(job))
        finally:
            with self._held_lock:
                self._running -= 1
                self._outstanding -= 1
                if self._outstanding <= self._refill_at:
                    self._room.set()

    def _heartbeat(self) -> None:
        """Every third of a lease, extend the leases of the jobs held."""
        every = max(self.lease.total_seconds() / 3, 0.05)
        while not self._stopping.wait(every):
            with self._held_lock:
                held = list(self._held.values())
            try:
                self.store.extend_leases(held, self.clock.now() + self.lease)
            except Exception:
                log.exception("could not extend job leases; retrying")

    def _stop(
        self, pool: ThreadPoolExecutor, finished: queue.SimpleQueue[_Done], done: list[_Done]
    ) -> None:
        """Give back what has not started, let running jobs finish (for up to `grace`
        seconds), settle them, give back the rest. If the store fails meanwhile, what is
        left unsettled comes back when its lease runs out."""
        with self._held_lock:
            self._stopping.set()  # queued jobs now return without running
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + self.grace
        try:
            while True:
                done += _take_all(finished)
                self._settle(done)
                done = []
                with self._held_lock:
                    running = self._running
                if not running or time.monotonic() >= deadline:
                    break
                _wait(finished, min(0.1, max(deadline - time.monotonic(), 0)))
            self._settle(_take_all(finished))  # put there before `running` was counted
            with self._held_lock:
                rest = list(self._held.values())
            now = self.clock.now()
            for job in rest:
                self.store.retry(job, now)  # not started, or still running after the grace
            if rest:
                log.warning("stopped: gave back %d job(s) not finished", len(rest))
        except Exception:
            log.exception("stopping: could not settle every job; their leases will run out")
        with self._held_lock:
            self._held.clear()

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run_forever, args=(stop,), name="worker", daemon=True)
        thread.start()
        return thread


def _take_all(finished: queue.SimpleQueue[_Done]) -> list[_Done]:
    out: list[_Done] = []
    while True:
        try:
            out.append(finished.get_nowait())
        except queue.Empty:
            return out


def _wait(finished: queue.SimpleQueue[_Done], timeout: float) -> None:
    """Wait until a job finishes (it is put back for `_take_all`) or `timeout` passes."""
    try:
        done = finished.get(timeout=timeout)
    except queue.Empty:
        return
    finished.put(done)


def _unavailable(exc: BaseException) -> bool:
    """A lost or refused connection (Redis down or restarting), not a bug."""
    return isinstance(exc, (OSError, RedisConnectionError, RedisTimeoutError))
