"""Block builders: examples that work, the booked window, the billing label."""

from __future__ import annotations

from datetime import timedelta

from bot.blocks.help import example_request, help_blocks
from bot.blocks.requests import summary_line
from bot.domain.grammar import parse_request
from tests.factories import NOW, make_record


def test_the_help_example_always_parses_and_starts_in_the_future() -> None:
    for days in (0, 30, 400):
        now = NOW + timedelta(days=days)
        draft = parse_request(example_request(now), now=now)
        assert draft.missing() == []
        assert draft.start is not None and draft.start > now
        assert example_request(now) in str(help_blocks(now))


def test_summary_shows_the_asked_window_before_an_offering_is_chosen() -> None:
    line = summary_line(make_record())
    assert "2026-12-14 00:00 UTC → 2026-12-17 00:00 UTC" in line
