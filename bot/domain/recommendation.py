"""Pick one option, with reasons, following the source article's framework.

Three factors: availability need, cost model, workload environment. Start from the least
constrained option (On-Demand, or Spot for interruptible work) and move to a reservation
when availability or timing is critical, or when at the expected utilisation the
reservation is simply cheaper. Warn when a launch or event is less than 3 weeks away.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from bot.domain.budgets import BudgetCheck
from bot.domain.catalog import Catalog
from bot.domain.comparison import Option, OptionKind, assess_options, scarce
from bot.domain.future_reservation import AHEAD, AT_WINDOW
from bot.domain.learning import LearnedUtil
from bot.domain.market import MarketSnapshot
from bot.domain.offering_rules import CB_MAX_AHEAD, capacity_block_start_too_far
from bot.domain.request import CapacityRequest, Workload
from bot.domain.words import percent

PLAN_AHEAD = timedelta(weeks=3)
# Work that happens at a fixed moment other people depend on: timing is critical.
TIME_CRITICAL = (Workload.EVENT, Workload.INFERENCE)


class Recommendation(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: OptionKind | None
    reasons: list[str]
    warnings: list[str] = []
    region: str | None = None  # set when several regions were searched


class RegionQuote(BaseModel):
    """One region's answer when several were searched."""

    model_config = ConfigDict(frozen=True)

    region: str
    recommended: OptionKind | None
    total_usd: float | None
    start: datetime | None  # of the recommended offering, if it is a reservation
    options: list[Option]


class Quote(BaseModel):
    model_config = ConfigDict(frozen=True)

    request: CapacityRequest
    quoted_at: datetime
    options: list[Option]
    recommendation: Recommendation
    regions: list[RegionQuote] = []  # every region searched, when there were several
    learned: LearnedUtil | None = None  # the team's measured util, used for want of util=
    # One line from the capacity outlook, when no block or plan fits or the start is closer
    # than such offerings were usually seen (bot/services/outlook.py `note_for`).
    outlook_note: str | None = None
    # The team's month with the recommended option's most, as the ledger kept it when
    # quoted (None: no budget): seen before Submit, as approvers see it after.
    budget: BudgetCheck | None = None

    def option(self, kind: OptionKind) -> Option:
        return next(o for o in self.options if o.kind is kind)

    @property
    def recommended(self) -> Option | None:
        kind = self.recommendation.kind
        return self.option(kind) if kind else None


# Whether an option may be submitted under the spending limit for one request (judged on
# the most it can cost), and that limit: the quote recommends among those that may.
Submittable = Callable[[Option], bool]


@dataclass(frozen=True)
class Cap:
    """The limit for one request (GPU_BOT_MAX_REQUEST_USD), as the quote applies it."""

    submittable: Submittable
    limit_usd: float


def build_quote(
    request: CapacityRequest,
    snapshot: MarketSnapshot,
    catalog: Catalog,
    now: datetime,
    cap: Cap | None = None,
) -> Quote:
    options = assess_options(request, snapshot, catalog, now)
    return Quote(
        request=request,
        quoted_at=now,
        options=options,
        recommendation=recommend(request, options, now, cap),
    )


def most_usd(option: Option) -> float:
    """The most an option can cost (its expected total for quotes kept before it was)."""
    return option.most_usd if option.most_usd is not None else _total(option)


def recommend(
    request: CapacityRequest, options: list[Option], now: datetime, cap: Cap | None = None
) -> Recommendation:
    """The pick and why, among the options that may be submitted under `cap` (among all
    when none may: the quote then says that nothing can be submitted)."""
    warnings = _timing_warnings(request, now)
    priced, capped = _submittable(options, cap)
    if not priced:
        barred = "; ".join(f"{o.kind.label}: {o.reasons[0]}" for o in options if o.reasons)
        return Recommendation(
            kind=None,
            reasons=[f"no option is possible for this request ({barred})"],
            warnings=warnings,
        )
    reserved = [o for o in priced if o.kind.reserved]
    blocks_or_plans = [o for o in reserved if o.kind is not OptionKind.ON_DEMAND_RESERVATION]
    if blocks_or_plans and scarce(request.instance_type):
        # Short reservations of P/Trn types are rarely available: do not count on one
        # while a Capacity Block or training plan can be had.
        reserved = blocks_or_plans
    flexible = [o for o in priced if not o.kind.reserved]
    chosen, reasons = _choose(request, reserved, flexible, warnings)
    if cap is not None:
        reasons += [_capped_line(o, cap) for o in capped]
    reasons += _environment_caveat(request, chosen, priced)
    if chosen.kind is OptionKind.ON_DEMAND_RESERVATION:
        reasons.append(_why_on_demand_reservation(blocks_or_plans))
    source = chosen.price_source
    if source and source.estimate:
        warnings.append(f"the {chosen.kind.label} price is an estimate: {source.detail}")
    return Recommendation(kind=chosen.kind, reasons=reasons, warnings=warnings)


def _submittable(options: list[Option], cap: Cap | None) -> tuple[list[Option], list[Option]]:
    """The priced options that may be submitted under `cap`, and those it holds back
    (none held back when it would hold back every one)."""
    priced = [o for o in options if o.eligible and o.total_usd is not None]
    if cap is None:
        return priced, []
    capped = [o for o in priced if not cap.submittable(o)]
    if len(capped) < len(priced):
        return [o for o in priced if cap.submittable(o)], capped
    return priced, []  # every option is over: said by the quote, not as a reason


def _choose(
    request: CapacityRequest,
    reserved: list[Option],
    flexible: list[Option],
    warnings: list[str],
) -> tuple[Option, list[str]]:
    """The cheapest reservation or the cheapest flexible option, and why; adds to
    `warnings` what a time-critical reservation costs more than flexible capacity."""
    best_reserved = _cheapest(reserved)
    best_flexible = _cheapest(flexible)
    critical = request.workload in TIME_CRITICAL
    if best_reserved and (critical or not best_flexible):
        reasons = [_why_reserved(request, critical, best_reserved)]
        reasons.append(_cost_line(best_reserved, best_flexible, request))
        if best_flexible and _total(best_reserved) > _total(best_flexible):
            warnings.append(
                f"at {request.utilization_pct}% utilisation the reservation costs "
                f"{_usd(_total(best_reserved) - _total(best_flexible))} more than "
                f"{best_flexible.kind.label} would, if capacity were there"
            )
        return best_reserved, reasons
    if best_reserved and best_flexible and _total(best_reserved) <= _total(best_flexible):
        # Cheaper, or the same: a guarantee that costs nothing more is taken.
        return best_reserved, [
            _cost_line(best_reserved, best_flexible, request),
            "it also guarantees the window"
            if best_reserved.kind is not OptionKind.ON_DEMAND_RESERVATION
            else f"it also holds capacity, but {_odcr_terms(best_reserved)}",
        ]
    assert best_flexible is not None
    chosen = best_flexible
    reasons = [_why_flexible(chosen, request)]
    on_demand = next((o for o in flexible if o.kind is OptionKind.ON_DEMAND), None)
    if chosen.kind is OptionKind.SPOT and on_demand is not None:
        # Spot's saving is against On-Demand, the option it replaces.
        reasons.append(_cost_line(chosen, on_demand, request))
    elif best_reserved:
        reasons.append(_cost_line(chosen, best_reserved, request))
    if best_reserved:
        # Dearer than the choice here (the branch above takes it otherwise).
        more = _usd(_total(best_reserved) - _total(chosen))
        if best_reserved.kind is OptionKind.ON_DEMAND_RESERVATION:
            reasons.append(
                f"{_a(best_reserved.kind.label)} costs {more} more, but "
                f"{_odcr_terms(best_reserved)}"
            )
        else:
            reasons.append(
                f"if the start cannot slip, {_a(best_reserved.kind.label)} guarantees the "
                f"window for {more} more"
            )
    return chosen, reasons


def _environment_caveat(
    request: CapacityRequest, chosen: Option, priced: list[Option]
) -> list[str]:
    """When the request did not say EC2 or SageMaker, say what the pick assumes."""
    if request.environment is not None:
        return []
    needs = {
        OptionKind.TRAINING_PLAN: "SageMaker",
        OptionKind.CAPACITY_BLOCK: "EC2",
        OptionKind.ON_DEMAND_RESERVATION: "EC2",
    }
    where = needs.get(chosen.kind)
    if where is None:
        return []
    others = [o for o in priced if needs.get(o.kind) != where]
    best_other = _cheapest(others)
    line = f"this assumes the work runs on {where}"
    if best_other is not None:
        line += (
            f"; otherwise the best is {best_other.kind.label} at {_usd(_total(best_other))} "
            f"(add `ec2` or `sagemaker` to the request to decide)"
        )
    return [line]


def _capped_line(option: Option, cap: Cap) -> str:
    return (
        f"{option.kind.label} is left out: it can cost up to {_usd(most_usd(option))} "
        f"(running the whole window), above the {_usd(cap.limit_usd)} limit for one request "
        "(GPU_BOT_MAX_REQUEST_USD)"
    )


def _why_on_demand_reservation(blocks_or_plans: list[Option]) -> str:
    if not blocks_or_plans:
        return (
            "no Capacity Block or training plan fits this request, so this is the only way "
            "to hold the capacity; it costs the full On-Demand rate for the whole window"
        )
    other = _cheapest(blocks_or_plans)
    assert other is not None
    return (
        f"cheaper than {_a(other.kind.label)} ({_usd(_total(other))}) for a window this short, "
        "since blocks and plans are billed by whole days; ask AWS whether it can be created "
        "before counting on it"
    )


def _odcr_terms(option: Option) -> str:
    """When an ODCR holds capacity: asked ahead (AWS may decline) or made at the window."""
    return AHEAD if option.reserved_ahead else AT_WINDOW


def _why_reserved(request: CapacityRequest, critical: bool, best: Option) -> str:
    if critical and best.kind is OptionKind.ON_DEMAND_RESERVATION:
        return (
            f"availability is critical for {_a(request.workload.value)}: a reservation "
            f"holds capacity and On-Demand does not, but {_odcr_terms(best)}"
        )
    if critical:
        return (
            f"availability is critical for {_a(request.workload.value)}: a reservation "
            "guarantees the window, On-Demand capacity is not guaranteed"
        )
    return "nothing without a reservation is possible for this request"


def _why_flexible(option: Option, request: CapacityRequest) -> str:
    if option.kind is OptionKind.SPOT:
        return "the work is interruptible, so Spot is the cheapest least-constrained option"
    return (
        "least constrained: no commitment, and "
        f"{request.workload.value} can wait for capacity if it is short"
    )


def _cost_line(first: Option, second: Option | None, request: CapacityRequest) -> str:
    """`first` against `second` at the expected utilisation, with the break-even."""
    line = f"{first.kind.label} costs {_usd(_total(first))}"
    if second is not None:
        line += f" against {_usd(_total(second))} for {second.kind.label}"
    line += f" at {request.utilization_pct}% expected utilisation"
    reserved = first if first.kind.reserved else second
    if reserved is not None and reserved.break_even_utilization is not None:
        line += (
            f"; {reserved.kind.label} breaks even with {reserved.break_even_against} at "
            f"{percent(reserved.break_even_utilization)}"
        )
    return line


def _timing_warnings(request: CapacityRequest, now: datetime) -> list[str]:
    far = _far_ahead(request, now)
    if far is not None:
        return [far]
    if request.workload not in TIME_CRITICAL:
        return []
    lead = request.start - now
    if lead >= PLAN_AHEAD:
        return []
    days = max(lead.days, 0)
    return [
        f"the {request.workload.value} starts in {days} day{'s' if days != 1 else ''}: AWS "
        "advises planning production launches and large events at least 3 weeks ahead, "
        "with your account team"
    ]


def _far_ahead(request: CapacityRequest, now: datetime) -> str | None:
    """What can be bought for a start beyond the 8 weeks AWS sells blocks and plans
    ahead, and when a watch can take it (a watch looks at most that far ahead)."""
    if not capacity_block_start_too_far(request.start, now):
        return None
    earliest = (request.start - CB_MAX_AHEAD).date().isoformat()
    return (
        f"it starts more than 8 weeks from now: no Capacity Block or training plan can be "
        f"bought for it before {earliest}; until then only On-Demand (or Spot) and an "
        "On-Demand Capacity Reservation made when the window opens can be asked for. "
        f"From {earliest}, `/gpu watch` can watch for a block or plan for it"
    )


def _cheapest(options: list[Option]) -> Option | None:
    return min(options, key=_total, default=None)


def _total(option: Option) -> float:
    assert option.total_usd is not None
    return option.total_usd


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun
