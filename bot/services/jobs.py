"""The jobs the worker runs: kinds, their payloads, their handlers.

Each kind is declared once, here or beside the flow it belongs to, as a `JobKind`: its
name and a pydantic payload model. The composition root gives each kind its one handler
in a `JobRegistry`; the worker looks the kind up by the name stored with the job (never
parsed out of the id), validates the payload into the model and calls the handler.

A job id is unique per occurrence: `<kind>:<key>`, one key per request and kind, so
scheduling the same kind again replaces (or follows) the pending one instead of adding
another. A handler that cannot finish yet raises `RetryLater(at, reason)`: its job goes
back, due at `at`, without counting a failed attempt (Slack's Retry-After, capacity not
active yet), or, with `failed=True`, counting one. Any other exception is a failed
attempt, retried with backoff. How often and how long is the kind's own `Retries`:
a purchase, a reminder and a chart do not fail in the same way or cost the same.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from bot.domain.request import CapacityRequest
from bot.services.ports import Job

P = TypeVar("P", bound=BaseModel)


class RetryLater(Exception):
    """Raised by a handler: give the job back, due at `at`, without counting an attempt
    unless `failed` (an outcome that went wrong, such as a Slack post that may not have
    happened: counted, so that one failing for ever ends in the dead letters)."""

    def __init__(self, at: datetime, reason: str, failed: bool = False) -> None:
        self.at = at
        self.reason = reason
        self.failed = failed
        super().__init__(f"retry at {at.isoformat()}: {reason}")


@dataclass(frozen=True)
class Retries:
    """How a kind's failed attempts are retried: waits that double from `first` up to
    `longest`, and after `attempts` failures the job goes to the dead letters for an
    operator."""

    attempts: int = 8
    first: timedelta = timedelta(seconds=30)
    longest: timedelta = timedelta(hours=1)

    def wait(self, attempt: int) -> timedelta:
        """The wait after failure number `attempt` (1, 2, ...)."""
        doublings = min(max(attempt - 1, 0), 30)  # past 30 the cap has long applied
        return min(self.first * (1 << doublings), self.longest)


# 30 s, 1 min, 2 min, ... an hour; eight failures in about two hours: a Slack or AWS
# outage of that length is an operator's matter.
STANDARD = Retries()


@dataclass(frozen=True)
class JobKind(Generic[P]):
    """A kind of job: its name (stored with each job), the model of its payload and how
    its failures are retried."""

    name: str
    payload: type[P]
    retries: Retries = STANDARD

    def job(self, key: str, due: datetime, payload: P) -> Job:
        """The occurrence `<name>:<key>` of this kind, due at `due`."""
        return Job(
            id=f"{self.name}:{key}",
            kind=self.name,
            due=due,
            payload=payload.model_dump(mode="json"),
        )


class UnknownJobKind(Exception):
    """A job whose kind has no handler in this process (an older worker during a
    rolling deploy, or a kind that was removed)."""


@dataclass(frozen=True)
class _Entry:
    kind: JobKind[Any]
    handler: Callable[[Any], object]


class JobRegistry:
    """Each kind with its one handler."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def register(self, kind: JobKind[P], handler: Callable[[P], object]) -> None:
        if kind.name in self._entries:
            raise ValueError(f"job kind {kind.name!r} already has a handler")
        self._entries[kind.name] = _Entry(kind, handler)

    def kinds(self) -> list[str]:
        return sorted(self._entries)

    def retries(self, kind: str) -> Retries:
        """The kind's retry policy (the standard one for a kind this process lacks)."""
        entry = self._entries.get(kind)
        return entry.kind.retries if entry is not None else STANDARD

    def missing(self, kinds: Iterable[JobKind[Any]]) -> list[str]:
        """Kinds among `kinds` that have no handler."""
        return sorted(k.name for k in kinds if k.name not in self._entries)

    def run(self, kind: str, payload: dict[str, Any]) -> object:
        """Validate `payload` into the kind's model and run its handler.

        Raises UnknownJobKind, pydantic.ValidationError, RetryLater or whatever the handler
        raises."""
        entry = self._entries.get(kind)
        if entry is None:
            raise UnknownJobKind(f"no handler for job kind {kind!r}")
        return entry.handler(entry.kind.payload.model_validate(payload))


def occurrence_key() -> str:
    """A key for a job that is its own occurrence (each ask). An id, not a secret: from
    the interpreter's generator (reseeded in each forked process), since a system call
    in the ack path would hand the interpreter to another thread."""
    return f"{random.getrandbits(128):032x}"


# --- the request flow's kinds ---------------------------------------------------------


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RequestJob(_Payload):
    """A job about one stored request."""

    request: str


class OpenJob(_Payload):
    """A request asked for with `/gpu reserve` or the form: store it as a draft (its id
    allocated once per `key`) and queue its quote."""

    key: str
    user: str
    request: CapacityRequest
    asked_at: datetime
    response_url: str | None = None
    channel: str | None = None  # where it was asked (a channel may name its team)


class QuoteJob(_Payload):
    """Quote a new draft; show the comparison at `response_url`, else by DM."""

    request: str
    response_url: str | None = None


class QuoteOnlyJob(_Payload):
    """`/gpu quote`: compare and show, storing nothing."""

    user: str
    request: CapacityRequest
    response_url: str | None = None
    channel: str | None = None  # where it was asked (a channel may name its team)


OPEN = JobKind("open", OpenJob)
QUOTE = JobKind("quote", QuoteJob)
# Someone waits for the answer at a response_url valid for 30 minutes: a few quick tries.
QUOTE_ONLY = JobKind("quote-only", QuoteOnlyJob, Retries(attempts=4, longest=timedelta(minutes=5)))
NOTIFY = JobKind("notify", RequestJob)
TIMEOUT = JobKind("timeout", RequestJob)
REQUEST_FLOW_KINDS: tuple[JobKind[Any], ...] = (OPEN, QUOTE, QUOTE_ONLY, NOTIFY, TIMEOUT)


def open_job(
    user: str,
    request: CapacityRequest,
    now: datetime,
    response_url: str | None,
    channel: str | None = None,
) -> Job:
    """Each ask is its own job (and, once run, its own request)."""
    key = occurrence_key()
    payload = OpenJob(
        key=key,
        user=user,
        request=request,
        asked_at=now,
        response_url=response_url,
        channel=channel,
    )
    return OPEN.job(key, now, payload)


def quote_job(request_id: str, now: datetime, response_url: str | None) -> Job:
    return QUOTE.job(request_id, now, QuoteJob(request=request_id, response_url=response_url))


def timeout_job_id(request_id: str) -> str:
    return f"{TIMEOUT.name}:{request_id}"


def timeout_job(request_id: str, deadline: datetime) -> Job:
    """Time the request out if nobody decided by `deadline`."""
    return TIMEOUT.job(request_id, deadline, RequestJob(request=request_id))


def notify_job(request_id: str, now: datetime) -> Job:
    """Show people the request's current state (see services/notifications.py)."""
    return NOTIFY.job(request_id, now, RequestJob(request=request_id))


def quote_only_job(
    user: str,
    request: CapacityRequest,
    now: datetime,
    response_url: str | None,
    channel: str | None = None,
) -> Job:
    """Each ask is its own job."""
    payload = QuoteOnlyJob(user=user, request=request, response_url=response_url, channel=channel)
    return QUOTE_ONLY.job(occurrence_key(), now, payload)


# --- purchasing's kinds ---------------------------------------------------------------

# An approved purchase (or extension) is tried again soon and often, since the offering
# may go, for about two hours; each try looks at AWS before it buys, so trying again
# never buys twice.
BUYING = Retries(attempts=12, first=timedelta(seconds=15), longest=timedelta(minutes=15))
PURCHASE = JobKind("purchase", RequestJob, BUYING)
TRACK = JobKind("track", RequestJob)
PURCHASE_KINDS: tuple[JobKind[Any], ...] = (PURCHASE, TRACK)


def purchase_job(request_id: str, due: datetime) -> Job:
    """Buy what was approved (scheduled in the same step as the approval)."""
    return PURCHASE.job(request_id, due, RequestJob(request=request_id))


def track_job(request_id: str, due: datetime) -> Job:
    """Follow what was bought (or the window of what needs nothing bought) to its end."""
    return TRACK.job(request_id, due, RequestJob(request=request_id))
