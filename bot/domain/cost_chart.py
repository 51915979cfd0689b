"""The quote as a picture: total cost against expected utilisation, 0 to 100%.

Each eligible option is a straight line. Pay-as-you-go options (On-Demand, Spot) rise from
nothing at 0% to their whole-window cost at 100%; a reservation (Capacity Block, training
plan, On-Demand Capacity Reservation) costs its total whatever the use, so its line is flat.
Where a flat line crosses a rising one, the two cost the same: a break-even point. The
request's own expected utilisation is where the comparison priced every option.

Pure: the figures come from the comparison (bot/domain/comparison.py); drawing them is an
adapter's job (bot/adapters/charts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.comparison import OptionKind
from bot.domain.recommendation import Quote


@dataclass(frozen=True)
class CostLine:
    """One eligible option: its total cost at 0% and at 100% utilisation (a straight line)."""

    kind: OptionKind
    at_zero: float
    at_full: float
    recommended: bool

    @property
    def label(self) -> str:
        return self.kind.label

    @property
    def flat(self) -> bool:
        return self.at_zero == self.at_full

    def cost_at(self, utilization: float) -> float:
        return self.at_zero + (self.at_full - self.at_zero) * utilization


@dataclass(frozen=True)
class BreakEven:
    """Where reservation `reserved` and pay-as-you-go `against` cost the same."""

    reserved: OptionKind
    against: OptionKind
    utilization: float  # a fraction, 0..1
    usd: float


@dataclass(frozen=True)
class CostChart:
    title: str
    lines: tuple[CostLine, ...]
    break_evens: tuple[BreakEven, ...]
    expected_utilization: float  # the request's, a fraction

    @property
    def empty(self) -> bool:
        return not self.lines


def cost_chart(quote: Quote) -> CostChart:
    """The lines, the break-even points and the expected utilisation of `quote`."""
    request = quote.request
    lines: list[CostLine] = []
    for option in quote.options:
        if not option.eligible or option.total_usd is None:
            continue
        recommended = option.kind is quote.recommendation.kind
        if option.kind.reserved:
            # Prepaid (or billed for the whole window): the same total at any use.
            lines.append(CostLine(option.kind, option.total_usd, option.total_usd, recommended))
        elif option.hourly_usd is not None:
            full = option.hourly_usd * request.instance_hours
            lines.append(CostLine(option.kind, 0.0, full, recommended))
    return CostChart(
        title=chart_title(quote),
        lines=tuple(lines),
        break_evens=tuple(_break_evens(lines)),
        expected_utilization=request.utilization,
    )


def chart_title(quote: Quote) -> str:
    r = quote.request
    days, hours = divmod(r.duration_hours, 24)
    length = f"{days}d" if not hours else (f"{r.duration_hours}h")
    return (
        f"{r.count}x {r.instance_type}, {length} from {r.start:%Y-%m-%d %H:%M} UTC "
        f"in {r.region}: total cost by utilisation"
    )


def _break_evens(lines: list[CostLine]) -> list[BreakEven]:
    """Every point in 0..100% where a flat line meets a rising one."""
    found: list[BreakEven] = []
    for reserved in (line for line in lines if line.flat):
        for rising in (line for line in lines if not line.flat):
            slope = rising.at_full - rising.at_zero
            if slope <= 0:
                continue
            at = (reserved.at_zero - rising.at_zero) / slope
            if 0.0 <= at <= 1.0:
                found.append(BreakEven(reserved.kind, rising.kind, at, reserved.at_zero))
    return sorted(found, key=lambda b: b.utilization)
