"""The one way a stored record is changed: read, decide, write if unchanged since the
read, and on a conflict decide again with the fresh record (never overwrite a change
someone else made). Requests and deployments both change this way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

Record = TypeVar("Record")
Decision = TypeVar("Decision")
TRIES = 10


class TooManyConflicts(RuntimeError):
    """Others changed the record `TRIES` times between a read and a write."""


def compare_and_set(
    read: Callable[[], Record | None],
    decide: Callable[[Record], Decision | None],
    write: Callable[[Record, Decision], Record],
    conflict: type[Exception],
    *,
    first: Record | None = None,
    what: str = "the record",
) -> tuple[Record | None, Decision | None]:
    """`decide` the change for the current record (None: nothing to change) and `write`
    it over that record; `write` raises `conflict` when the record moved meanwhile, and
    the decision is taken again on a fresh read. `first`: a record just read, to decide
    on before reading again.

    Returns the written record (or the current one when nothing changed, None when there
    is none) and the decision that was written, if any."""
    current = first if first is not None else read()
    for _ in range(TRIES):
        if current is None:
            return None, None
        decision = decide(current)
        if decision is None:
            return current, None
        try:
            return write(current, decision), decision
        except conflict:
            current = read()
    raise TooManyConflicts(f"{what}: too many concurrent changes")
