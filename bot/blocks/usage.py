"""Idle alerts, the report card and utilisation lines as Block Kit: pure functions."""

from __future__ import annotations

from datetime import timedelta

from bot.blocks.elements import actions, button, confirmed, context, section
from bot.blocks.ids import ActionId
from bot.blocks.reminders import Message
from bot.blocks.text import usd, user
from bot.blocks.values import RequestRef
from bot.domain.comparison import OptionKind
from bot.domain.reminders import human_duration
from bot.domain.sampling import IdleStep, ReportCard
from bot.domain.utilisation import Usage
from bot.domain.words import percent

_NOUN = {
    OptionKind.CAPACITY_BLOCK: "the block",
    OptionKind.TRAINING_PLAN: "the plan",
    OptionKind.ON_DEMAND_RESERVATION: "the reservation",
}


def _noun(kind: OptionKind) -> str:
    return _NOUN.get(kind, "the reservation")


def _hours(value: float) -> str:
    return f"{value:,.1f}"


def utilisation_line(usage: Usage | None) -> str:
    """For App Home and the reminders: what ran so far."""
    pct = usage.utilisation_pct if usage is not None else None
    if usage is None or pct is None:
        return "Utilisation: not measured yet"
    running = f"{usage.running} running now"
    return (
        f"Utilisation so far: {percent(pct / 100)} ({_hours(usage.used_instance_hours)} of "
        f"{_hours(usage.billed_instance_hours)} instance-hours), {running}"
    )


def idle_alert(
    request_id: str,
    kind: OptionKind,
    step: IdleStep,
    idle_for: timedelta,
    stretch_usd: float | None,
    idle_usd: float | None,
    releasable: bool,
) -> Message:
    """To the requester: nothing has run for `idle_for` while it bills; `idle_usd`: what
    the instance-hours billed and not used cost so far, every idle stretch together."""
    again = {
        IdleStep.AGAIN: " Told again after 12 h idle.",
        IdleStep.ESCALATE: " The approvers were told too.",
    }.get(step, "")
    head = (
        f":zzz: Nothing has run in request {request_id}'s {kind.label} for "
        f"{human_duration(idle_for)}, and it bills whether instances run or not.{again}"
    )
    cost = (
        f"This idle stretch cost {usd(stretch_usd)}; unused instance-hours have cost "
        f"{usd(idle_usd)} so far in all."
    )
    blocks = [section(head), section(cost)]
    if releasable:
        blocks.append(_release(request_id))
    else:
        blocks.append(context("It cannot be cancelled: launch into it, or let it run out."))
    text = f"Request {request_id} has been idle for {human_duration(idle_for)}."
    return Message(text=text, blocks=blocks)


def idle_escalation(
    request_id: str,
    requester: str,
    kind: OptionKind,
    idle_for: timedelta,
    stretch_usd: float | None,
    releasable: bool,
) -> Message:
    """For the approval channel: idle for a day."""
    head = (
        f":warning: Request {request_id} ({user(requester)}'s {kind.label}) has run nothing "
        f"for {human_duration(idle_for)}: {usd(stretch_usd)} billed for no use."
    )
    blocks = [section(head)]
    if releasable:
        blocks.append(_release(request_id))
    text = f"Request {request_id} has been idle for {human_duration(idle_for)}."
    return Message(text=text, blocks=blocks)


def _release(request_id: str) -> dict[str, object]:
    release = button("Release it", ActionId.RELEASE, RequestRef(request_id), "danger")
    question = (
        f"Cancel request {request_id}'s On-Demand Capacity Reservation now and clean up what "
        "is tagged for it? Its capacity is gone for good."
    )
    return actions(
        f"release:{request_id}",
        confirmed(release, "Release it?", question, yes="Release", danger=True),
    )


def verdict(card: ReportCard) -> str:
    saved = card.saved_usd
    if saved is None:
        return "No On-Demand price is known to compare with."
    if saved >= 0:
        return f"{_noun(card.kind).capitalize()} saved {usd(saved)}."
    return f"On-Demand would have been {usd(-saved)} cheaper."


def report_card(card: ReportCard) -> Message:
    """When a reservation ends: what was paid, used, and what On-Demand would have cost."""
    head = (
        f":bar_chart: Request {card.request_id} has ended: {card.instances} x "
        f"{card.instance_type} ({card.kind.label})."
    )
    figures = "\n".join(
        [
            f"Paid: {usd(card.paid_usd)}",
            f"Used: {_hours(card.used_instance_hours)} of "
            f"{_hours(card.billed_instance_hours)} instance-hours "
            f"({percent(card.utilisation_pct / 100)} utilisation)",
            f"On-Demand for the hours used: {usd(card.on_demand_usd)}",
        ]
    )
    line = verdict(card)
    blocks = [
        section(head),
        section(figures),
        section(f"*{line}*"),
        context(
            "Measured by sampling the instances running in it; each count holds until "
            "the next sample."
        ),
    ]
    return Message(text=f"Request {card.request_id}: {line}", blocks=blocks)
