"""Who may approve: configured user ids, plus the members of a Slack user group."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import timedelta

from bot.services.ports import GroupDirectory, Store

log = logging.getLogger(__name__)
GROUP_TTL = timedelta(minutes=5)


class ApproverDirectory:
    def __init__(
        self,
        user_ids: Iterable[str],
        group: str | None = None,
        groups: GroupDirectory | None = None,
        cache: Store | None = None,
        ttl: timedelta = GROUP_TTL,
    ) -> None:
        self.user_ids = frozenset(user_ids)
        self.group = group
        self._groups = groups
        self._cache = cache
        self._ttl = ttl

    def is_approver(self, user: str) -> bool:
        return user in self.user_ids or user in self._group_members()

    def _group_members(self) -> frozenset[str]:
        if not self.group or self._groups is None:
            return frozenset()
        key = f"group:{self.group}"
        if self._cache is not None:
            cached = self._cache.cache_get(key)
            if cached is not None:
                return frozenset(json.loads(cached))
        try:
            members = self._groups.members(self.group)
        except Exception as exc:
            # Fail closed: without the group, only the configured ids may approve.
            log.warning("could not read approver group %s: %s", self.group, exc)
            return frozenset()
        if self._cache is not None:
            self._cache.cache_put(key, json.dumps(sorted(members)), self._ttl)
        return frozenset(members)
