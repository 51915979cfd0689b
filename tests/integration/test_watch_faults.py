"""Watches through a SIGKILL: two worker processes run the rounds and send the matches,
one is killed as the first matches arrive and replaced; every watch gets its match once,
counted at the fake Web API (the benchmark's run, smaller)."""

from __future__ import annotations

import pytest

from benchmarks.watches import once_through_a_kill


@pytest.mark.long
def test_every_match_is_delivered_once_through_two_workers_and_a_sigkill() -> None:
    outcome = once_through_a_kill(60, distinct=3, patience=90)
    assert outcome["delivered"] == 60
    assert outcome["duplicates"] == 0
    assert outcome["lost"] == 0
