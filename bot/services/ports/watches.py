"""Watches as the services see them: where they are kept, and the one search a round
makes for each question."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from bot.domain.audit import AuditEntry
from bot.domain.market import Offering
from bot.domain.watch import Question, Seen, Sent, Watch, WatchLimits, WatchState
from bot.services.ports.jobs import Job


class WatchStore(Protocol):
    def next_watch_id(self) -> str: ...

    def create_watch(
        self,
        watch: Watch,
        asked: Sequence[tuple[Question, Job]],
        end: Job,
        limits: WatchLimits,
    ) -> int:
        """Store `watch` in the questions it asks; schedule the round job of each
        question nobody asked yet and the watch's `end`, in the same step. How many
        rounds were scheduled. Raises `WatchesFull`, storing nothing, when the watcher
        or everyone already has as many watches watching as `limits` allow (checked in
        the same step)."""
        ...

    def search_turn(self, round_job: str, window: int, per_window: int) -> int:
        """The search window in which `round_job` may ask AWS: `window` (or an earlier
        turn it held) means now; a later one, wait until it. At most `per_window` turns
        are handed out in any window, first come, first served."""
        ...

    def get_watch(self, watch_id: str) -> Watch | None: ...

    def watches(self, user: str | None = None, live_only: bool = False) -> list[Watch]:
        """The watches of `user` (None: everyone's), newest first."""
        ...

    def question(self, key: str) -> Question | None: ...

    def asking(self, key: str) -> list[Watch]:
        """The watches asking the question `key`."""
        ...

    def set_state(self, watch_id: str, state: WatchState, note: str, keys: Sequence[str]) -> bool:
        """Move a watching watch to `state` and out of the questions `keys`; False when it
        was not watching."""
        ...

    def note_seen(self, watch_id: str, seen: Seen) -> None: ...

    def schedule(self, job: Job) -> None:
        """Add or move `job` (by its id) to its due time."""
        ...

    def record_match(
        self, watch_id: str, sent: Sent, margin: float, job: Job, audit: AuditEntry
    ) -> bool:
        """Record the match and schedule its message in one step, when it is new and
        better than the last one sent (by `margin`); False otherwise."""
        ...

    def retire_question(self, key: str, round_job: str) -> bool:
        """Retire a question no live watch asks any more (True), unless one joined."""
        ...

    def watch_audit(self, watch_id: str) -> list[AuditEntry]: ...


class WatchesFull(Exception):
    """A new watch would pass a limit: the watcher's own (`per_person`) or everyone's;
    `count` is how many are watching now under that limit."""

    def __init__(self, per_person: bool, count: int) -> None:
        self.per_person = per_person
        self.count = count
        super().__init__(f"{count} watches watching ({'per person' if per_person else 'in all'})")


class SearchThrottled(Exception):
    """AWS throttled the search: ask again after a back-off."""


class SearchRefused(Exception):
    """AWS refused the search for the account (a describe limit): not worth retrying.
    `code` is AWS's error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class OfferingSearch(Protocol):
    def search(self, question: Question, account: str | None, now: datetime) -> list[Offering]:
        """The offerings AWS has for the question now: one call (paginated)."""
        ...
