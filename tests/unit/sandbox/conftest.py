"""A sandbox market on its own clock, set to a Capacity Block boundary (11:30 UTC) so
offering times come out as round numbers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from aws_sandbox import SandboxMarket
from bot.adapters.clock import ManualClock

NOW = datetime(2026, 3, 2, 11, 30, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def market(clock: ManualClock) -> SandboxMarket:
    return SandboxMarket(clock)
