"""Every event is a decision in the one table: it causes jobs (`CAUSES`) or it is listed
as causing nothing but the rows every change has (`QUIET`), never forgotten."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

from bot.domain import events
from bot.services.reactions import QUIET, Reactions


def _concrete_events() -> set[type[events.Event]]:
    found = {
        cls
        for _, cls in inspect.getmembers(events, inspect.isclass)
        if issubclass(cls, events.Event) and cls.__module__ == events.__name__
    }
    # The bases group events; only the events themselves are written with a change.
    return found - {events.Event, events.ExtensionEvent}


@pytest.mark.parametrize("charts", [True, False])
def test_every_event_causes_something_or_is_listed_as_quiet(charts: bool) -> None:
    # The table as a process builds it (the card's chart is a cause only when drawn).
    causes = Reactions(lambda: datetime.now(UTC), charts=charts).causes
    undecided = sorted(e.__name__ for e in _concrete_events() - set(causes) - QUIET)
    assert undecided == [], f"add to CAUSES or QUIET (bot/services/reactions.py): {undecided}"


def test_no_event_is_both_causing_and_quiet() -> None:
    causes = Reactions(lambda: datetime.now(UTC), charts=True).causes
    assert sorted(e.__name__ for e in set(causes) & QUIET) == []
