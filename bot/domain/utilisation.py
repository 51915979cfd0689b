"""How much of a reservation ran: the measured use kept on each tracked request.

Sampling (how many instances ran, from AWS) adds to it while the reservation bills; the
report card, the learned default `util` and the spend report read it.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """What was measured so far. `billed_instance_hours` counts the hours sampled (the
    reservation's instances times the time it was sampled over), `used_instance_hours`
    the instances found running over the same time."""

    model_config = ConfigDict(frozen=True)

    used_instance_hours: float = 0.0
    billed_instance_hours: float = 0.0
    last_sample_at: datetime | None = None
    running: int = 0  # instances running at the last sample
    idle_since: datetime | None = None  # the start of the current idle stretch, if idle
    idle_alerts: int = 0  # idle alerts sent in the current stretch (0 when running)

    @property
    def utilisation_pct(self) -> float | None:
        """Used over billed, in percent (None before anything was measured)."""
        if self.billed_instance_hours <= 0:
            return None
        return 100.0 * self.used_instance_hours / self.billed_instance_hours
