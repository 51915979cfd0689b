"""Reading requests: by id, by requester, and their history. Changes nothing."""

from __future__ import annotations

from bot.domain.audit import AuditEntry
from bot.domain.records import CapacityRecord
from bot.domain.request_ids import normalise_id
from bot.services.ports import Requests


class RequestQueries:
    def __init__(self, store: Requests) -> None:
        self.store = store

    def get(self, request_id: str) -> CapacityRecord | None:
        """The request a person named (`r12`, `R12` or `12`), if it exists."""
        return self.store.get(normalise_id(request_id))

    def mine(self, user: str, limit: int = 20, offset: int = 0) -> list[CapacityRecord]:
        """The user's requests, newest first."""
        return self.store.for_user(user, limit, offset)

    def count_mine(self, user: str) -> int:
        return self.store.count_for_user(user)

    def history(self, request_id: str, last: int = 2000) -> list[AuditEntry]:
        """The request's latest audit entries, oldest first."""
        return self.store.audit(request_id, limit=last, newest=True)
