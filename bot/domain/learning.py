"""The learned default `util`: what a team's last reservations measured becomes the next
quote's expected utilisation, when the request does not say `util=`. The reservations are
those whose use is measured to their end, kept per team as each one closes
(bot/domain/ledger.py, Closed): nothing is read but the team's last few."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from bot.domain.words import percent

if TYPE_CHECKING:
    from bot.domain.ledger import Closed

_USER = re.compile(r"[UW][A-Z0-9]{2,}")
LEARN_FROM = 5  # the last this many measured reservations of a team


class LearnedUtil(BaseModel):
    """A team's measured utilisation, weighted by size (billed instance-hours)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: str
    reservations: int  # how many it was learned from
    pct: int  # 1..100, what the quote used

    def sentence(self) -> str:
        """What the quote says of it."""
        # Without GPU_BOT_TEAMS the team is the requester's own user id.
        who = "your" if _USER.fullmatch(self.team) else f"your team {self.team}'s"
        last = f"last {self.reservations} reservations" if self.reservations > 1 else "last one"
        return f"{who} {last} ran at {self.pct}%: quoted at {self.pct}%; `util=` overrides"


def learned_util(closed: Sequence[Closed], team: str, last: int = LEARN_FROM) -> LearnedUtil | None:
    """From the `last` most recent (by start) closed reservations of `team`: the used
    instance-hours over the billed ones, so a big block weighs more than a small one.
    None when nothing of the team was measured."""
    chosen = sorted((c for c in closed if c.billed_hours > 0), key=lambda c: c.start)[-last:]
    if not chosen:
        return None
    used = sum(c.used_hours for c in chosen)
    billed = sum(c.billed_hours for c in chosen)
    # Rounded as every shown percentage is (bot.domain.words.percent: halves up).
    pct = min(100, max(1, int(percent(used / billed).rstrip("%"))))
    return LearnedUtil(team=team, reservations=len(chosen), pct=pct)
