"""The `Metrics` port on prometheus_client, and the /metrics page.

Two sources make one page:
- counters and histograms kept by each process (requests decided, purchases, jobs run,
  Slack and AWS calls, work after the ack). Under gunicorn each worker process writes
  them to files in PROMETHEUS_MULTIPROC_DIR and a scrape, in whichever process answers,
  adds the files up (prometheus_client's multiprocess mode);
- gauges read from the store when scraped (requests by state, jobs due, how late the
  oldest is, dead letters): one truth shared by every process, nothing to keep in step.

A scrape never fails as a whole: a store that does not answer gives
`gpu_bot_store_up 0`, and a process's file that cannot be read (prometheus_client
creates it empty, then sizes it: a scrape in between could not parse it) is left out
and counted in `gpu_bot_metrics_files_unreadable`.
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from bot.adapters.metrics.files import ENV
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.ports import StoreCounts

log = logging.getLogger(__name__)

# A metrics file starts with its used size (4 bytes) and padding: shorter, it is being made.
_HEADER = 8

_OWN = CollectorRegistry(auto_describe=True)
TRANSITIONS = Counter(
    "gpu_bot_request_transitions_total",
    "Requests that entered a state (created ones count in their first state)",
    ["state"],
    registry=_OWN,
)
APPROVALS = Counter("gpu_bot_approvals_total", "Approvals given by approvers", registry=_OWN)
REJECTIONS = Counter("gpu_bot_rejections_total", "Requests rejected by approvers", registry=_OWN)
PURCHASES = Counter(
    "gpu_bot_purchases_total",
    "Reservations bought (AWS accepted the purchase)",
    ["kind", "account"],
    registry=_OWN,
)
SPEND = Counter(
    "gpu_bot_purchase_spend_usd_total",
    "USD committed by purchases: the upfront fee, else the quoted expected total",
    ["kind", "account"],
    registry=_OWN,
)
PURCHASE_FAILURES = Counter(
    "gpu_bot_purchase_failures_total",
    "Purchases that failed, or whose outcome is not known (a person must decide)",
    ["state"],
    registry=_OWN,
)
JOBS = Counter(
    "gpu_bot_jobs_total",
    "Jobs run by kind and outcome: ok, later (gave itself back), retry (failed, will run "
    "again), dead (failed for good: in the dead-letter hash)",
    ["kind", "outcome"],
    registry=_OWN,
)
CALL_SECONDS = Histogram(
    "gpu_bot_external_call_seconds",
    "Slack Web API and AWS API calls, retries included",
    ["service", "operation"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=_OWN,
)
CALL_ERRORS = Counter(
    "gpu_bot_external_call_errors_total",
    "Slack Web API and AWS API calls that failed, by error code",
    ["service", "operation", "error"],
    registry=_OWN,
)
AFTER_ACK = Gauge(
    "gpu_bot_after_ack_tasks",
    "Work handed off by listeners, queued or running after the ack",
    registry=_OWN,
    multiprocess_mode="livesum",
)


class PrometheusMetrics:
    """The `Metrics` port: process-wide counters (one registry per process)."""

    def request_saved(self, old: CapacityRecord | None, new: CapacityRecord) -> None:
        if old is None or old.state != new.state:
            TRANSITIONS.labels(new.state.value).inc()
        given = len(new.approvals) - (len(old.approvals) if old else 0)
        if given > 0:
            APPROVALS.inc(given)
        if new.state == State.REJECTED and (old is None or old.state != State.REJECTED):
            REJECTIONS.inc()
        bought = new.reservation
        if bought is not None and (old is None or old.reservation is None):
            kind, account = bought.kind.value, bought.account
            PURCHASES.labels(kind, account).inc()
            SPEND.labels(kind, account).inc(_spend(new))
        failed = {State.FAILED, State.PURCHASE_UNKNOWN}
        if old is not None and old.state == State.PURCHASING and new.state in failed:
            PURCHASE_FAILURES.labels(new.state.value).inc()

    def job_finished(self, kind: str, outcome: str) -> None:
        JOBS.labels(kind, outcome).inc()

    def external_call(self, service: str, operation: str, seconds: float, error: str) -> None:
        CALL_SECONDS.labels(service, operation).observe(seconds)
        if error:
            CALL_ERRORS.labels(service, operation, error[:60]).inc()

    def after_ack_depth(self, change: int) -> None:
        AFTER_ACK.inc(change)


def _spend(record: CapacityRecord) -> float:
    reservation = record.reservation
    if reservation is not None and reservation.fee_usd is not None:
        return reservation.fee_usd
    option = record.chosen_option
    return (option.total_usd or 0.0) if option is not None else 0.0


# --- the page ------------------------------------------------------------------------


# Read once, as prometheus_client reads it when imported: the mode is fixed from then on.
_DIR = os.environ.get(ENV) or None


def multiprocess_dir() -> str | None:
    return _DIR


def render(counts: Callable[[], StoreCounts] | None = None) -> tuple[bytes, str]:
    """The /metrics page and its content type."""
    registry = CollectorRegistry(auto_describe=False)
    path = multiprocess_dir()
    registry.register(_Files(path) if path else _Forward(_OWN))
    if counts is not None:
        registry.register(_StoreCollector(counts))
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Forward(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        return self._registry.collect()


class _Files(Collector):
    """prometheus_client's MultiProcessCollector, leaving out files it cannot read."""

    def __init__(self, path: str) -> None:
        self._path = path

    def collect(self) -> Iterable[Metric]:
        files, unreadable = [], 0
        for name in glob.glob(os.path.join(self._path, "*.db")):
            try:
                if os.path.getsize(name) >= _HEADER:
                    files.append(name)
                else:
                    unreadable += 1
            except OSError:  # removed since listed (a process marked dead)
                continue
        try:
            merged: list[Metric] = list(MultiProcessCollector.merge(files, accumulate=True))  # type: ignore[no-untyped-call]
        except Exception:
            good = [name for name in files if _readable(name)]
            unreadable += len(files) - len(good)
            merged = list(MultiProcessCollector.merge(good, accumulate=True))  # type: ignore[no-untyped-call]
        skipped = GaugeMetricFamily(
            "gpu_bot_metrics_files_unreadable",
            "Per-process metrics files left out of this scrape (being created, or damaged)",
            value=unreadable,
        )
        return [*merged, skipped]


def _readable(name: str) -> bool:
    try:
        MultiProcessCollector.merge([name], accumulate=True)  # type: ignore[no-untyped-call]
    except Exception as exc:
        log.warning("metrics file %s left out of the scrape: %s", os.path.basename(name), exc)
        return False
    return True


class _StoreCollector(Collector):
    def __init__(self, counts: Callable[[], StoreCounts]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("gpu_bot_store_up", "1 when the store answered this scrape")
        try:
            counts = self._counts()
        except Exception as exc:
            log.warning("metrics: the store did not answer: %s", exc)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        by_state = GaugeMetricFamily(
            "gpu_bot_requests", "Requests in each state now", labels=["state"]
        )
        for state in State:
            by_state.add_metric([state.value], counts.requests.get(state.value, 0))
        return [
            up,
            by_state,
            _gauge("gpu_bot_jobs_due", "Jobs due now and not yet claimed", counts.jobs_due),
            _gauge(
                "gpu_bot_jobs_scheduled", "Jobs waiting, due now or later", counts.jobs_scheduled
            ),
            _gauge("gpu_bot_jobs_in_flight", "Jobs claimed by a worker", counts.jobs_in_flight),
            _gauge(
                "gpu_bot_jobs_dead",
                "Jobs given up on, kept in the dead-letter hash for an operator",
                counts.jobs_dead,
            ),
            _gauge(
                "gpu_bot_job_lateness_seconds",
                "How long the longest-waiting due job has been due (0: none waiting)",
                counts.oldest_due_seconds,
            ),
        ]


def _gauge(name: str, text: str, value: Any) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, value=value)
