"""The jobs the worker runs, and their ids: one id per request and kind, so scheduling
the same kind again replaces (or follows) the pending one instead of adding another."""

from __future__ import annotations

import uuid
from datetime import datetime

from bot.domain.request import CapacityRequest
from bot.services.ports import Job


def quote_job(request_id: str, now: datetime, response_url: str | None) -> Job:
    """Quote a new draft and show the comparison at `response_url` (else by DM)."""
    return Job(
        id=f"quote:{request_id}",
        due=now,
        payload={"request": request_id, "response_url": response_url or ""},
    )


def timeout_job_id(request_id: str) -> str:
    return f"timeout:{request_id}"


def timeout_job(request_id: str, deadline: datetime) -> Job:
    """Time the request out if nobody decided by `deadline`."""
    return Job(id=timeout_job_id(request_id), due=deadline, payload={"request": request_id})


def notify_job(request_id: str, now: datetime) -> Job:
    """Show people the request's current state (see services/notifications.py)."""
    return Job(id=f"notify:{request_id}", due=now, payload={"request": request_id})


def quote_only_job(
    user: str, request: CapacityRequest, now: datetime, response_url: str | None
) -> Job:
    """`/gpu quote`: compare and show, storing nothing (each ask is its own job)."""
    return Job(
        id=f"quote-only:{uuid.uuid4().hex}",
        due=now,
        payload={
            "user": user,
            "request": request.model_dump_json(),
            "response_url": response_url or "",
        },
    )
