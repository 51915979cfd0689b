"""Reminders, extension cards and cleanup prompts as Block Kit: pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.blocks.elements import actions, button, confirmed, context, section
from bot.blocks.ids import ActionId
from bot.blocks.purchase import unknown_extension_buttons
from bot.blocks.spend import budget_line
from bot.blocks.text import clip, esc, usd, user, when
from bot.blocks.values import ExtendAsk, ExtensionRef, RequestRef
from bot.domain.cleanup import Inventory, Leftover, LeftoverKind
from bot.domain.extension import Extension, ExtensionOffer, ExtensionStatus
from bot.domain.reminders import Reminder, ReminderKind, ReservationView, human_duration
from bot.domain.usage import usage_hint
from bot.domain.words import counted

Block = dict[str, Any]
MAX_LEFTOVER_LINES = 30  # the rest is summed up in one line


@dataclass(frozen=True)
class Message:
    text: str  # the notification fallback
    blocks: list[Block]


def _what(reservation: ReservationView) -> str:
    kind = "training plan" if reservation.kind == "training-plan" else "Capacity Block"
    if reservation.kind == "on-demand-reservation":
        kind = "On-Demand Capacity Reservation"
    return f"{kind} {reservation.instances}x {reservation.instance_type}"


def _where(reservation: ReservationView) -> str:
    zone = reservation.availability_zone or reservation.region
    return f"`{esc(reservation.id)}` in {zone}"


def reminder_message(
    request_id: str,
    reminder: Reminder,
    reservation: ReservationView,
    now: datetime,
    *,
    late: bool = False,
    extension: ExtensionOffer | None = None,
    not_extendable: str | None = None,
    more: Sequence[Block] = (),
) -> Message:
    """The message for one reminder; `late` after downtime, `extension` (before the end)
    adds an Extend button with its price, `not_extendable` says instead why none can be
    asked for; `more` blocks go last (a Deploy button)."""
    what, where = _what(reservation), _where(reservation)
    kind = reminder.kind
    start, end = when(reservation.start), when(reservation.end)
    if kind is ReminderKind.BEFORE_START:
        left = human_duration(reservation.start - now)
        head = f":calendar: Your {what} ({request_id}) starts at *{start}*, in {left}."
    elif kind is ReminderKind.AT_START:
        head = f":large_green_circle: Your {what} ({request_id}) is delivered: ends *{end}*."
    elif kind is ReminderKind.BEFORE_END:
        left = human_duration(reservation.end - now)
        head = f":alarm_clock: Your {what} ({request_id}) ends at *{end}*, in {left}."
    elif kind is ReminderKind.CHECKPOINT:
        head = (
            f":rotating_light: Your {what} ({request_id}) ends at *{end}*. Instances start "
            "being terminated 30 minutes before the end: *save your checkpoints now*."
        )
    else:
        head = f":checkered_flag: Your {what} ({request_id}) ended at {end}."
    if late:
        head += f" _(late: this reminder was due {when(reminder.due)})_"
    blocks = [section(head), context(f"Reservation {where} · {start} → {end}")]
    if kind in (ReminderKind.BEFORE_START, ReminderKind.AT_START):
        hint = usage_hint(
            reservation.kind,
            reservation.id,
            reservation.region,
            reservation.availability_zone,
            reservation.instance_type,
            reservation.instances,
            request_id,
        )
        blocks.append(section(f"{hint.title}\n```{hint.command}```"))
    if extension is not None and kind.about_end:
        blocks.append(extend_offer_blocks(request_id, extension))
    elif not_extendable and kind.about_end:
        why = esc(not_extendable)
        blocks.append(section(f":no_entry: {request_id} cannot be extended: {why}."))
    blocks += more
    return Message(text=clip(head.replace("*", ""), 3000), blocks=blocks)


def window_reminder_message(
    request_id: str,
    reminder: Reminder,
    kind: str,
    instances: int,
    instance_type: str,
    end: datetime,
    now: datetime,
    *,
    late: bool = False,
) -> Message:
    """Before the end of an On-Demand or Spot request's window. AWS extends neither and
    stops nothing at the end: more time is a new request, and what still runs after the
    end is what the cleanup prompt will ask about."""
    what = f"{'Spot' if kind == 'spot' else 'On-Demand'} {instances}x {instance_type}"
    left = human_duration(end - now)
    head = (
        f":alarm_clock: The window of your {what} request ({request_id}) ends at "
        f"*{when(end)}*, in {left}."
    )
    if late:
        head += f" _(late: this reminder was due {when(reminder.due)})_"
    lines = [
        "Instances keep running (and billing) after the window: stop what you no longer "
        f"need; anything tagged `gpu-bot:request-id={esc(request_id)}` still running "
        "after the end is listed for cleanup.",
        "On-Demand and Spot cannot be extended: for more time, ask for a new request "
        "(`/gpu reserve`).",
    ]
    if kind == "spot":
        lines.insert(
            0,
            "Spot capacity can be interrupted at any time (two minutes' notice): "
            "nothing guarantees it until the end, so keep checkpoints.",
        )
    blocks = [section(head), context("\n".join(lines))]
    return Message(text=clip(head.replace("*", ""), 3000), blocks=blocks)


def extend_offer_blocks(request_id: str, offer: ExtensionOffer) -> Block:
    """The Extend button with the price, beside the before-end reminder."""
    return {
        "type": "section",
        "block_id": f"extend:{request_id}",
        "text": {
            "type": "mrkdwn",
            "text": (
                f"Extend by {offer.hours // 24} d to {when(offer.end)} for "
                f"*{usd(offer.fee_usd)}* (needs approval)"
            ),
        },
        "accessory": confirmed(
            button(
                f"Extend ({usd(offer.fee_usd)})",
                ActionId.EXTEND,
                ExtendAsk(request_id, offer.hours),
            ),
            "Ask to extend?",
            f"Ask the approvers to extend request {request_id} by {offer.hours // 24} d to "
            f"{when(offer.end)} for *{usd(offer.fee_usd)}*? AWS charges it once approved; "
            "an extension cannot be undone.",
            yes="Ask to extend",
        ),
    }


def extension_card(
    request_id: str, requester: str, extension: Extension, with_buttons: bool = True
) -> Message:
    """What approvers see for an extension: the same money rule as a purchase."""
    offer = extension.offer
    text = (
        f":hourglass: {user(extension.requested_by)} asks to extend {request_id} "
        f"(requested by {user(requester)}) by {offer.hours // 24} d, to {when(offer.end)}, "
        f"for *{usd(offer.fee_usd)}* paid up front (it cannot be cancelled)."
    )
    blocks = [section(text)]
    if extension.budget is not None:
        blocks.append(context(budget_line(extension.budget, "extension")))
    status = extension.status.value.replace("_", " ")
    line = f"Extension {extension.number}: *{status}*"
    if extension.status is ExtensionStatus.PENDING_APPROVAL:
        line += f" ({len(extension.approvals)} of {extension.required_approvals} approvals)"
    if extension.approved_by:
        verb = "rejected" if extension.status is ExtensionStatus.REJECTED else "approved"
        line += f" · {verb} by {user(extension.approved_by)}"
    if extension.reason:
        # AWS's refusal is not bounded and escaping can make it 5x longer: clip first.
        line += f" · {esc(clip(extension.reason, 500))}"
    blocks.append(context(line))
    if with_buttons and extension.status is ExtensionStatus.PENDING_APPROVAL:
        value = ExtensionRef(request_id, extension.number)
        blocks.append(
            actions(
                f"extension:{request_id}:{extension.number}",
                button("Approve…", ActionId.EXTENSION_APPROVE, value, "primary"),
                button("Reject", ActionId.EXTENSION_REJECT, value, "danger"),
            )
        )
    if with_buttons and extension.status is ExtensionStatus.UNKNOWN:
        blocks.append(unknown_extension_buttons(request_id, extension.number))
    return Message(text=clip(text.replace("*", ""), 3000), blocks=blocks)


def _leftover_line(item: Leftover) -> str:
    cost = f"{usd(item.usd_per_hour)}/h" if item.usd_per_hour else "no charge"
    note = f" · {esc(item.note)}" if item.note else ""
    return f"• {item.kind.label} `{esc(item.id)}` ({esc(item.region)}) · {cost}{note}"


def _leftover_lines(found: Inventory) -> str:
    items = found.in_cleanup_order()
    lines = [_leftover_line(item) for item in items[:MAX_LEFTOVER_LINES]]
    if len(items) > MAX_LEFTOVER_LINES:
        lines.append(f"…and {len(items) - MAX_LEFTOVER_LINES} more")
    return "\n".join(lines)


def _not_ours_lines(found: Inventory) -> str | None:
    """What was found beside the request's own resources, which cleanup leaves alone."""
    if not found.not_ours:
        return None
    lines = [
        f"• {item.kind.label} `{esc(item.id)}`{f', {esc(item.note)}' if item.note else ''}"
        for item in found.not_ours[:MAX_LEFTOVER_LINES]
    ]
    if len(found.not_ours) > MAX_LEFTOVER_LINES:
        lines.append(f"…and {len(found.not_ours) - MAX_LEFTOVER_LINES} more")
    return "*Not ours, left alone* (not tagged for this request):\n" + "\n".join(lines)


def _cost_line(found: Inventory) -> str:
    if not found.usd_per_hour:
        return "Nothing here is billed, but it no longer works and is best removed."
    return (
        f"Still costing *{usd(found.usd_per_hour)}/h* ({usd(found.usd_per_day)} a day) "
        "until it is removed."
    )


def cleanup_prompt(request_id: str, found: Inventory, repeat: int = 1) -> Message:
    """Asks the requester to clean up, listing what is left and what it costs."""
    again = f" (reminder {repeat})" if repeat > 1 else ""
    head = f":broom: Request {request_id} has ended, and this is still there{again}:"
    odcr = any(i.kind is LeftoverKind.CAPACITY_RESERVATION for i in found.items)
    blocks = [section(head), section(_leftover_lines(found)), section(_cost_line(found))]
    if odcr:
        blocks.append(context("An On-Demand Capacity Reservation is billed until it is cancelled."))
    others = _not_ours_lines(found)
    if others:
        blocks.append(section(others))
    blocks.append(
        actions(
            f"cleanup:{request_id}",
            clean_up_now(request_id, len(found.items)),
            button("Keep for a day", ActionId.CLEANUP_KEEP, RequestRef(request_id)),
            button("Not mine", ActionId.CLEANUP_NOT_MINE, RequestRef(request_id)),
        )
    )
    left = counted(len(found.items), "resource")
    verb = "is" if len(found.items) == 1 else "are"
    text = f"Request {request_id} has ended; {left} {verb} still there."
    return Message(text=text, blocks=blocks)


def cleanup_escalation(
    request_id: str, requester: str, found: Inventory, disowned_by: str | None
) -> Message:
    """For the approval channel: nobody cleaned up (or the requester says it is not theirs)."""
    if disowned_by:
        why = f"{user(disowned_by)} says it is not theirs"
    else:
        why = f"{user(requester)} did not answer the cleanup prompts"
    head = f":warning: Request {request_id} has ended and {why}. Still there:"
    others = _not_ours_lines(found)
    blocks = [
        section(head),
        section(_leftover_lines(found)),
        section(_cost_line(found)),
        *([section(others)] if others else []),
        escalated_cleanup_buttons(request_id, len(found.items)),
    ]
    left = counted(len(found.items), "resource")
    text = f"Request {request_id} has ended and nobody cleaned up its {left}."
    return Message(text=text, blocks=blocks)


def clean_up_now(request_id: str, items: int | None = None) -> Block:
    """Clean up now, asking first whoever clicks it: it deletes and cannot be undone
    (`items`: how many resources the message lists; None: the ones tagged for it)."""
    clean = button("Clean up now", ActionId.CLEANUP_NOW, RequestRef(request_id), "danger")
    listed = (
        f"the {counted(items, 'resource')} listed" if items is not None else "every resource tagged"
    )
    question = f"Delete {listed} for request {request_id}? This cannot be undone."
    return confirmed(clean, "Delete all of it?", question, yes="Clean up", danger=True)


def escalated_cleanup_buttons(request_id: str, items: int | None = None) -> Block:
    """What the approvers can do about leftovers handed to them."""
    return actions(
        f"cleanup-escalated:{request_id}",
        clean_up_now(request_id, items),
        button("Keep for a day", ActionId.CLEANUP_KEEP, RequestRef(request_id)),
    )


def cleanup_done(request_id: str) -> Message:
    text = f":white_check_mark: Request {request_id} is cleaned up: nothing tagged for it is left."
    return Message(text=text, blocks=[section(text)])
