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
        return group_members(self.group, self._groups, self._cache, self._ttl)


def group_members(
    group: str,
    groups: GroupDirectory,
    cache: Store | None,
    ttl: timedelta = GROUP_TTL,
    strict: bool = False,
) -> frozenset[str]:
    """The members of a Slack user group, cached for `ttl`. When Slack cannot say: none
    (nobody is let in by a group that could not be read), or with `strict` the error
    is raised (a team's budget must not be skipped for want of its members)."""
    key = f"group:{group}"
    if cache is not None:
        cached = cache.cache_get(key)
        if cached is not None:
            return frozenset(json.loads(cached))
    try:
        members = groups.members(group)
    except Exception as exc:
        log.warning("could not read user group %s: %s", group, exc)
        if strict:
            raise
        return frozenset()
    if cache is not None:
        cache.cache_put(key, json.dumps(sorted(members)), ttl)
    return frozenset(members)
