"""What a requester can pick from a quote: each possible option, and each offering of it."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.approval import SpendingPolicy
from bot.domain.comparison import OptionKind
from bot.domain.market import Offering
from bot.domain.recommendation import Quote
from bot.domain.records import Choice


@dataclass(frozen=True)
class Candidate:
    value: str  # short and stable: "capacity-block:1" (option kind, offering index)
    kind: OptionKind
    offering: Offering | None
    total_usd: float  # expected, at the requester's utilisation
    recommended: bool
    most_usd: float  # at 100% of the window: what spending limits are checked against

    def choice(self) -> Choice:
        return Choice(
            kind=self.kind,
            offering_id=self.offering.offering_id if self.offering else None,
            total_usd=self.total_usd,
            most_usd=self.most_usd,
        )


def candidates(quote: Quote) -> list[Candidate]:
    out: list[Candidate] = []
    for option in quote.options:
        if not option.eligible or option.total_usd is None:
            continue
        recommended = option.kind is quote.recommendation.kind
        if option.offering is None:
            most = option.most_usd if option.most_usd is not None else option.total_usd
            out.append(
                Candidate(
                    f"{option.kind.value}:0", option.kind, None, option.total_usd, recommended, most
                )
            )
            continue
        for i, offering in enumerate((option.offering, *option.alternatives)):
            out.append(
                Candidate(
                    value=f"{option.kind.value}:{i}",
                    kind=option.kind,
                    offering=offering,
                    total_usd=round(offering.upfront_usd, 2),
                    recommended=recommended and i == 0,
                    most_usd=round(offering.upfront_usd, 2),
                )
            )
    return out


def submittable_candidates(quote: Quote, limits: SpendingPolicy | None) -> list[Candidate]:
    """The candidates `limits` let be submitted; all of them when none (or no limits)."""
    picks = candidates(quote)
    if limits is None:
        return picks
    allowed = [p for p in picks if limits.refusal(p.most_usd) is None]
    return allowed or picks


def candidate_by_value(quote: Quote, value: str) -> Candidate | None:
    return next((p for p in candidates(quote) if p.value == value), None)


def over_the_limit(quote: Quote, limits: SpendingPolicy) -> str | None:
    """Why nothing in `quote` may be submitted under `limits` (said for its cheapest
    candidate), or None when some option may be (or there is none to pick)."""
    picks = candidates(quote)
    refusals = [limits.refusal(p.most_usd) for p in picks]
    if not picks or None in refusals:
        return None
    cheapest = min(range(len(picks)), key=lambda i: picks[i].most_usd)
    return refusals[cheapest]
