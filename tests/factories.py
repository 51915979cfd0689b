"""Small builders for domain objects used across tests."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.ledger import settle
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.domain.request import CapacityRequest

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


def make_request(**kw: object) -> CapacityRequest:
    base: dict[str, object] = {
        "count": 2,
        "instance_type": "p5.48xlarge",
        "duration_hours": 72,
        "start": datetime(2026, 12, 14, tzinfo=UTC),
        "region": "us-east-1",
    }
    base.update(kw)
    return CapacityRequest.model_validate(base)


def make_record(request_id: str = "R1", **kw: object) -> CapacityRecord:
    base: dict[str, object] = {
        "id": request_id,
        "state": State.DRAFT,
        "requester": "U0REQUESTER",
        "created_at": NOW,
        "updated_at": NOW,
        "request": make_request(),
        "text": "2x p5.48xlarge 3d from 2026-12-14",
    }
    base.update(kw)
    record = CapacityRecord.model_validate(base)
    # As the store keeps every record: its money settled by the ledger's rules.
    return record if "ledger" in kw else settle(record, NOW, "made")
