"""The quote as a picture: total cost against expected utilisation, 0 to 100%.

Each eligible option is a straight line. Pay-as-you-go options (On-Demand, Spot) rise from
nothing at 0% to their whole-window cost at 100%; a reservation (Capacity Block, training
plan, On-Demand Capacity Reservation) costs its total whatever the use, so its line is flat.
Where a flat line crosses a rising one, the two cost the same: a break-even point. The
request's own expected utilisation is where the comparison priced every option: each
line's cost there is marked.

A reservation's break-even with On-Demand is the comparison's own figure (the one the
card's text gives, rounded the same way); when a training plan is compared with
SageMaker's On-Demand rate and the quote's On-Demand line is EC2's, that rate is drawn
too, as a reference line, so that its break-even sits on a crossing people can see.

Pure: the figures come from the comparison (bot/domain/comparison.py), and where each
label goes (so that none covers another) is worked out here, in axes fractions; drawing
is an adapter's job (bot/adapters/charts/png.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.comparison import Option, OptionKind
from bot.domain.recommendation import Quote
from bot.domain.words import percent

# Room above the dearest line, as a share of it, for the labels.
HEADROOM = 1.12
# Label sizes in axes fractions, for an 8-point font on the 800x450 picture (the plot area
# is about 700 x 330 pixels): a character is about 6 px wide and a line 12 px high.
CHAR_WIDTH = 0.0089
LINE_HEIGHT = 0.038
GAP_X = 0.008  # from the point to the label
GAP_Y = 0.012


@dataclass(frozen=True)
class CostLine:
    """One eligible option: its total cost at 0% and at 100% utilisation (a straight line).
    A `reference` line is no option: the rate a reservation's break-even is against."""

    kind: OptionKind
    at_zero: float
    at_full: float
    recommended: bool
    name: str = ""  # shown instead of the option's label (a reference line's)
    reference: bool = False

    @property
    def label(self) -> str:
        return self.name or self.kind.label

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
    against_name: str = ""  # "SageMaker On-Demand" when against a reference line

    @property
    def label(self) -> str:
        return percent(self.utilization)


@dataclass(frozen=True)
class Label:
    """A text on the chart and its box, in axes fractions (0..1 both ways); `x` is the
    box's left edge, `y` its bottom."""

    text: str
    x: float
    y: float
    width: float
    height: float
    of: OptionKind | None = None  # a cost's option (drawn in its colour)
    muted: bool = False  # the expected utilisation's (drawn in grey)

    def overlaps(self, other: Label) -> bool:
        return not (
            self.x + self.width <= other.x
            or other.x + other.width <= self.x
            or self.y + self.height <= other.y
            or other.y + other.height <= self.y
        )

    @property
    def inside(self) -> bool:
        return 0 <= self.x <= 1 - self.width and 0 <= self.y <= 1 - self.height


@dataclass(frozen=True)
class CostChart:
    title: str
    lines: tuple[CostLine, ...]
    break_evens: tuple[BreakEven, ...]
    expected_utilization: float  # the request's, a fraction

    @property
    def empty(self) -> bool:
        return not self.lines

    @property
    def options(self) -> tuple[CostLine, ...]:
        """The lines that are options (not reference lines)."""
        return tuple(line for line in self.lines if not line.reference)

    @property
    def top_usd(self) -> float:
        """The y axis's top: the dearest line and room above it for the labels."""
        if self.empty:
            return 1.0
        return max(max(line.at_zero, line.at_full) for line in self.lines) * HEADROOM or 1.0

    def costs_at_expected(self) -> list[tuple[CostLine, float]]:
        """Each option's cost at the request's expected utilisation: what the quote says."""
        return [(line, line.cost_at(self.expected_utilization)) for line in self.options]

    def labels(self) -> list[Label]:
        """Every label, placed so that none covers another and all stay inside the plot:
        the expected utilisation at the top, then the break-even points, then each
        option's cost at the expected utilisation."""
        placed: list[Label] = []
        expected_x = self.expected_utilization
        _place(
            placed,
            f"expected {percent(expected_x)}",
            expected_x,
            1.0,
            prefer_below=True,
            muted=True,
        )
        for point in self.break_evens:
            _place(placed, point.label, point.utilization, point.usd / self.top_usd)
        for line, usd in self.costs_at_expected():
            _place(placed, f"${usd:,.0f}", expected_x, usd / self.top_usd, of=line.kind)
        return placed


def _place(
    placed: list[Label],
    text: str,
    x: float,
    y: float,
    *,
    prefer_below: bool = False,
    of: OptionKind | None = None,
    muted: bool = False,
) -> None:
    """Put `text` beside the point (x, y), in the first spot that is inside the plot and
    free; failing that, nearest the point (it is never dropped)."""
    width, height = len(text) * CHAR_WIDTH, LINE_HEIGHT
    sides = (x + GAP_X, x - GAP_X - width)  # right of the point, then left
    rows = [y + GAP_Y, y - GAP_Y - height]  # above, then below
    if prefer_below:
        rows.reverse()
    for step in range(1, 12):  # then further off, a line at a time
        rows += [y + GAP_Y + step * height, y - GAP_Y - (step + 1) * height]
    candidates = [
        Label(text, left, bottom, width, height, of, muted) for bottom in rows for left in sides
    ]
    for label in candidates:
        if label.inside and not any(label.overlaps(other) for other in placed):
            placed.append(label)
            return
    inside = [c for c in candidates if c.inside] or candidates
    placed.append(inside[0])


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
    references = _reference_lines(quote)
    lines += references.values()
    return CostChart(
        title=chart_title(quote),
        lines=tuple(lines),
        break_evens=tuple(_break_evens(quote, lines, references)),
        expected_utilization=request.utilization,
    )


def _reference_lines(quote: Quote) -> dict[str, CostLine]:
    """By name: the rates some reservation's break-even is against that no option line
    shows (SageMaker's On-Demand when the On-Demand option is priced at EC2's)."""
    found: dict[str, CostLine] = {}
    for option in quote.options:
        rate = option.break_even_usd_per_hour
        if not option.eligible or rate is None or option.break_even_against == "On-Demand":
            continue
        full = rate * quote.request.instance_hours
        name = option.break_even_against
        found[name] = CostLine(OptionKind.ON_DEMAND, 0.0, full, False, name, reference=True)
    return found


def _break_evens(
    quote: Quote, lines: list[CostLine], references: dict[str, CostLine]
) -> list[BreakEven]:
    """Each reservation's break-even with the On-Demand it is compared with (the
    comparison's figure), and every point in 0..100% where it meets Spot."""
    found: list[BreakEven] = []
    by_kind = {line.kind: line for line in lines if not line.reference}
    for option in quote.options:
        line = by_kind.get(option.kind)
        if line is None or not line.flat:
            continue
        own = _own_break_even(option, line, references)
        if own is not None:
            found.append(own)
        spot = by_kind.get(OptionKind.SPOT)
        if spot is not None and spot.at_full > spot.at_zero:
            at = (line.at_zero - spot.at_zero) / (spot.at_full - spot.at_zero)
            if 0.0 <= at <= 1.0:
                found.append(BreakEven(option.kind, OptionKind.SPOT, at, line.at_zero))
    return sorted(found, key=lambda b: b.utilization)


def _own_break_even(
    option: Option, line: CostLine, references: dict[str, CostLine]
) -> BreakEven | None:
    at = option.break_even_utilization
    if at is None or not 0.0 <= at <= 1.0:
        return None
    name = "" if option.break_even_against == "On-Demand" else option.break_even_against
    if name and name not in references:
        return None
    return BreakEven(option.kind, OptionKind.ON_DEMAND, at, line.at_zero, name)


def chart_title(quote: Quote) -> str:
    r = quote.request
    days, hours = divmod(r.duration_hours, 24)
    length = f"{days}d" if not hours else (f"{r.duration_hours}h")
    return (
        f"{r.count}x {r.instance_type}, {length} from {r.start:%Y-%m-%d %H:%M} UTC "
        f"in {r.region}: total cost by utilisation"
    )
