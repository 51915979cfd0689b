"""The comparison as Block Kit: every option, the recommendation and why."""

from __future__ import annotations

from typing import Any

from bot.blocks.elements import button, confirmed, context, section
from bot.blocks.ids import ActionId
from bot.blocks.spend import budget_line
from bot.blocks.text import clip, esc, rate, usd, user_text_block, when
from bot.blocks.values import RequestRef, WatchAskRef
from bot.domain.approval import SpendingPolicy
from bot.domain.choices import over_the_limit
from bot.domain.comparison import Option, OptionKind
from bot.domain.future_reservation import AHEAD_SHORT, AT_WINDOW_SHORT
from bot.domain.grammar import duration_words, render_request
from bot.domain.recommendation import Quote, most_usd
from bot.domain.request import CapacityRequest, RequestDraft
from bot.domain.words import percent

Block = dict[str, Any]


def request_title(r: CapacityRequest) -> str:
    return (
        f"{r.count}x {r.instance_type} for {duration_words(r.duration_hours)} "
        f"from {when(r.start)} ({r.region})"
    )


def request_context(r: CapacityRequest) -> str:
    env = r.environment.value if r.environment else "EC2 or SageMaker"
    parts = [r.workload.value, env, f"{r.utilization_pct}% expected utilisation"]
    if r.interruptible:
        parts.append("interruptible")
    return " · ".join(parts)


def option_line(option: Option, recommended: bool, limits: SpendingPolicy | None = None) -> str:
    """One option as mrkdwn: verdict, cost, and its first reasons; with `limits`, whether
    the limit for one request keeps it from being submitted."""
    star = " :star: recommended" if recommended else ""
    if not option.eligible:
        return f"*{option.kind.label}* :no_entry: not possible: {esc(option.reasons[0])}"
    facts = [f"*{usd(option.total_usd)}*", rate(option.hourly_usd)]
    if option.upfront:
        facts.append("upfront")
    else:
        facts.append("billed for the whole window" if option.kind.reserved else "pay as you go")
    if option.guaranteed:
        facts.append("guaranteed window")
    elif option.kind is OptionKind.ON_DEMAND_RESERVATION:
        facts.append(AHEAD_SHORT if option.reserved_ahead else AT_WINDOW_SHORT)
    else:
        facts.append("no guarantee")
    if option.interruptible:
        facts.append("interruptible")
    if option.break_even_utilization is not None:
        against = option.break_even_against
        named = "" if against == "On-Demand" else f" against {against}"
        facts.append(f"break-even {percent(option.break_even_utilization)}{named}")
    lines = [f"*{option.kind.label}*{star} :white_check_mark: " + " · ".join(facts)]
    limit = limits.max_request_usd if limits else None
    if limits and limit is not None and limits.refusal(most_usd(option)) is not None:
        lines.append(
            f":no_entry: cannot be submitted: it can cost up to {usd(most_usd(option))}, above "
            f"the {usd(limit)} limit for one request"
        )
    lines += [f"• {esc(reason)}" for reason in option.reasons[:3]]
    if option.price_source is not None:
        lines.append(f"_price from {esc(option.price_source.describe())}_")
    return clip("\n".join(lines), 2900)


def quote_blocks(
    quote: Quote, request_id: str | None = None, limits: SpendingPolicy | None = None
) -> list[Block]:
    """The full comparison. With a request id it ends with Submit / Cancel buttons; no
    Submit when every option is above the `limits` for one request: it says why instead."""
    r = quote.request
    rec = quote.recommendation
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(request_title(r), 150)}},
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": esc(request_context(r))}],
        },
    ]
    if quote.learned is not None:
        blocks.append(context(f":bar_chart: {esc(quote.learned.sentence())}"))
    if r.reason:
        blocks.append(user_text_block("Why:", r.reason))
    if rec.kind is None:
        blocks.append(section(f":x: *Nothing fits.* {esc(rec.reasons[0])}"))
    else:
        best = quote.option(rec.kind)
        lines = [f":star: *Recommended: {rec.kind.label}*, {usd(best.total_usd)}"]
        lines += [f"• {esc(reason)}" for reason in rec.reasons]
        blocks.append(section(clip("\n".join(lines), 2900)))
    for warning in rec.warnings:
        blocks.append(section(f":warning: {esc(warning)}"))
    blocks.append({"type": "divider"})
    for option in quote.options:
        blocks.append(section(option_line(option, option.kind is rec.kind, limits)))
    if quote.budget is not None and quote.recommendation.kind is not None:
        blocks.append(context(budget_line(quote.budget)))
    blocks += outlook_note_blocks(quote)
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"Quoted {when(quote.quoted_at)}"
                    + (f" · request {request_id}" if request_id else ""),
                }
            ],
        }
    )
    if request_id:
        blocks += _quote_buttons(quote, request_id, limits)
    return blocks


def _quote_buttons(quote: Quote, request_id: str, limits: SpendingPolicy | None) -> list[Block]:
    """Submit and Cancel; Dismiss alone when nothing fits (or why it cannot be submitted)."""
    rec = quote.recommendation
    blocks: list[Block] = []
    if rec.kind is None:
        # Nothing to submit: Dismiss takes it out of the person's open requests.
        dismiss = button("Dismiss", ActionId.CANCEL, RequestRef(request_id))
        blocks.append(
            {"type": "actions", "block_id": f"quote_actions:{request_id}", "elements": [dismiss]}
        )
    else:
        refused = over_the_limit(quote, limits) if limits else None
        buttons = [button("Cancel", ActionId.CANCEL, RequestRef(request_id))]
        if refused:
            blocks.append(section(f":no_entry: *Cannot be submitted:* {esc(refused)}."))
        else:
            submit = button(
                "Submit for approval…", ActionId.SUBMIT_OPEN, RequestRef(request_id), "primary"
            )
            buttons.insert(0, submit)
        blocks.append(
            {"type": "actions", "block_id": f"quote_actions:{request_id}", "elements": buttons}
        )
    return blocks


def watch_text(request: CapacityRequest) -> str:
    """The request as `/gpu watch` takes it (what it asks for, not why)."""
    draft = RequestDraft(
        count=request.count,
        instance_type=request.instance_type,
        duration_hours=request.duration_hours,
        start=request.start,
        region=request.region,
        environment=request.environment,
        account=request.account,
    )
    return render_request(draft)


def outlook_note_blocks(quote: Quote) -> list[Block]:
    """The outlook's one line, with a Watch button carrying the request (confirmed)."""
    if not quote.outlook_note:
        return []
    text = watch_text(quote.request)
    watch = confirmed(
        button("Watch for one…", ActionId.WATCH_START, WatchAskRef(text)),
        "Watch for it?",
        f"Watch for a Capacity Block or training plan of {esc(text)}? "
        "You get a DM when one is offered.",
        "Watch",
    )
    return [
        section(f":crystal_ball: {quote.outlook_note}"),
        {"type": "actions", "block_id": "outlook_watch", "elements": [watch]},
    ]


def quote_fallback(quote: Quote) -> str:
    rec = quote.recommendation
    verdict = f"recommended: {rec.kind.label}" if rec.kind else "nothing fits"
    return f"{request_title(quote.request)}: {verdict}"
