"""A tracked request as Block Kit: the approval card, status and list entries."""

from __future__ import annotations

from typing import Any

from bot.blocks.deploy import deploy_button, deployable
from bot.blocks.elements import actions, button, context, section
from bot.blocks.ids import ActionId
from bot.blocks.money import LEGEND, money_short, money_text
from bot.blocks.purchase import reservation_line, unknown_buttons, usage
from bot.blocks.quote import request_context, request_title
from bot.blocks.spend import budget_line
from bot.blocks.text import clip, esc, quoted, usd, user, user_text_block, when
from bot.blocks.values import RequestRef
from bot.domain.audit import BOT, AuditEntry
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.domain.ledger import asked_cents
from bot.domain.lifecycle import State
from bot.domain.money import Entry, LedgerEntry, dollars
from bot.domain.records import CapacityRecord
from bot.domain.request import Environment
from bot.domain.usage import window_launch_hint

Block = dict[str, Any]
FAILURE_CHARS = 500  # of a failure shown on a card, before escaping

STATE_ICONS = {
    State.DRAFT: ":hourglass_flowing_sand:",
    State.QUOTED: ":memo:",
    State.PENDING_APPROVAL: ":hourglass:",
    State.APPROVED: ":white_check_mark:",
    State.PURCHASING: ":credit_card:",
    State.PAYMENT_PENDING: ":credit_card:",
    State.SCHEDULED: ":calendar:",
    State.ACTIVE: ":large_green_circle:",
    State.EXPIRING: ":alarm_clock:",
    State.EXPIRED: ":checkered_flag:",
    State.CLEANED_UP: ":broom:",
    State.REJECTED: ":no_entry:",
    State.CANCELLED: ":wastebasket:",
    State.TIMED_OUT: ":zzz:",
    State.FAILED: ":x:",
    State.PURCHASE_UNKNOWN: ":warning:",
}


def state_line(record: CapacityRecord) -> str:
    icon = STATE_ICONS[record.state]
    line = f"{icon} *{record.state.label.capitalize()}*"
    if record.state is State.PENDING_APPROVAL:
        line += f" ({len(record.approvals)} of {record.required_approvals} approvals"
        if record.approval_deadline:
            line += f", decide by {when(record.approval_deadline)}"
        line += ")"
    if record.approvals:
        line += " · approved by " + ", ".join(
            f"{user(a.user)} {when(a.at)}" for a in record.approvals
        )
    if record.rejection:
        r = record.rejection
        line += f" · rejected by {user(r.user)} {when(r.at)}"
    if record.failure:
        # AWS's and the quoting's messages are not bounded; escaping can make them 5x longer.
        line += f" · {esc(clip(record.failure, FAILURE_CHARS))}"
    return line


def card_title(record: CapacityRecord) -> str:
    r = record.request
    return clip(f"GPU request {record.id}: {r.count}x {r.instance_type}", 150)


def request_card(record: CapacityRecord, with_buttons: bool = True) -> list[Block]:
    """The message approvers see. Buttons only while the request waits for a decision."""
    r = record.request
    option = record.chosen_option
    chosen = option.kind.label if option else "not chosen yet"
    if option and record.quote and record.quote.recommendation.kind is option.kind:
        chosen += " (recommended)"
    fields = [
        f"*Requester*\n{user(record.requester)}",
        f"*Instances*\n{r.count}x {r.instance_type} ({r.region})",
        f"*Window*\n{window(record)}",
        f"*Option*\n{chosen}",
        f"*Total*\n{total_text(record)}",
        f"*Workload*\n{esc(request_context(r))}",
    ]
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": card_title(record)}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]},
        user_text_block("Why:", record.reason or "(no reason)"),
    ]
    if record.quote:
        others = [
            f"{o.kind.label} {usd(o.total_usd)}" if o.eligible else f"~{o.kind.label}~"
            for o in record.quote.options
            if not option or o.kind is not option.kind
        ]
        blocks.append(
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "Alternatives: " + " · ".join(others)}],
            }
        )
    if record.budget is not None:
        blocks.append(context(budget_line(record.budget)))
    line = clip(state_line(record), 3000)  # many approvers make a long line too
    blocks.append(section(line))
    if record.rejection:
        blocks.append(user_text_block("Reason given:", record.rejection.reason))
    if record.reservation is not None:
        line = reservation_line(record.reservation)
        blocks.append(context(line))
    if with_buttons and record.state is State.PENDING_APPROVAL:
        blocks.append(approval_buttons(record))
    if with_buttons and record.state is State.PURCHASE_UNKNOWN:
        blocks.append(unknown_buttons(record))
    if with_buttons and deployable(record):
        blocks.append(deploy_button(record))
    return blocks


def total_text(record: CapacityRecord) -> str:
    """Before the approval, both figures: the requester's estimate and the most it can
    cost (the limits and the approvers go by the second; nothing holds a requester to the
    first). From the approval on, the ledger's figures (held, paid, released)."""
    option = record.chosen_option
    money = record.money
    if money.held or money.paid or money.released or money.estimate:
        text = money_text(record)
        if record.extended_usd and money.paid:
            purchase = money.paid_usd - record.extended_usd
            text += f" ({usd(purchase)} and {usd(record.extended_usd)} for extensions)"
        return text
    if option and option.upfront:
        return f"{usd(record.most_usd)} upfront"
    most = record.most_usd
    if most is None or record.total_usd is None or most == record.total_usd:
        return usd(record.total_usd)
    return (
        f"{usd(record.total_usd)} expected at {record.request.utilization_pct}% use\n"
        f"up to *{usd(most)}* if run for the whole window"
    )


def approval_buttons(record: CapacityRecord) -> Block:
    """Approve opens a confirmation with the amount (after checking that the clicker may
    approve: a refusal comes before any question); Reject opens the reason form."""
    return actions(
        f"approval:{record.id}",
        button("Approve…", ActionId.APPROVE, RequestRef(record.id), "primary"),
        button("Reject…", ActionId.REJECT_OPEN, RequestRef(record.id), "danger"),
    )


def approval_question(record: CapacityRecord) -> str:
    """What an approver confirms: the most it can cost, what, and whether it can be undone."""
    r = record.request
    option = record.chosen_option
    what = option.kind.label if option else "capacity"
    upto = "" if option and option.upfront else "up to "
    # Prepaid reservations are bought for good: say so where the money is approved.
    warning = " It is paid up front and cannot be cancelled." if option and option.upfront else ""
    if record.budget is not None:
        warning += f" {esc(record.budget.line())}."
    return (
        f"Approve {upto}*{usd(record.most_usd)}* for {r.count}x {r.instance_type} as "
        f"{_a(what)} (request {record.id})?{warning}"
    )


def card_fallback(record: CapacityRecord) -> str:
    return (
        f"GPU request {record.id} from {user(record.requester)}: "
        f"{request_title(record.request)}, {money_short(record)} ({record.state.label})"
    )


def summary_line(record: CapacityRecord) -> str:
    r = record.request
    option = record.chosen_option
    what = f" · {option.kind.label}" if option else ""
    return (
        f"{STATE_ICONS[record.state]} *{record.id}* {r.count}x {r.instance_type} "
        f"{window(record)}{what} · {money_short(record)} · _{record.state.label}_"
        f"{open_extension(record)}"
    )


_EXTENSION_WORDS = {
    ExtensionStatus.PENDING_APPROVAL: "waiting for approval",
    ExtensionStatus.APPROVED: "approved, being bought",
    ExtensionStatus.PURCHASING: "being bought",
    ExtensionStatus.PAYMENT_PENDING: "bought, AWS's payment pending",
    ExtensionStatus.UNKNOWN: "outcome unknown, being checked",
}


def open_extension(record: CapacityRecord) -> str:
    """An extension asked for and not settled yet, for a list line ("" when none): what
    waits for approvers is the ledger's asked figure; once approved it is in `held`."""
    ext = record.extension
    if ext is None or not ext.status.open:
        return ""
    days = ext.offer.hours // 24
    asked = asked_cents(record)
    fee = f" for {usd(dollars(asked))}" if asked else ""
    return (
        f"\n    ↳ extension {ext.number}: {days} d more to {when(ext.offer.end)}{fee}, "
        f"{_EXTENSION_WORDS.get(ext.status, ext.status.value.replace('_', ' '))}"
    )


def window(record: CapacityRecord) -> str:
    """The window as it stands: what AWS holds (with its extensions), else the offering
    chosen, else the one asked for."""
    start, end = record.window
    return f"{when(start)} → {when(end)}"


PAGE = 20  # requests per page of `/gpu list`
LINES_PER_SECTION = 10  # ten summary lines stay well under a section's 3,000 characters
LEDGER_LINES = 8  # a request has a handful of money entries; an estimate can add a few


def list_blocks(
    title: str,
    records: list[CapacityRecord],
    empty: str,
    *,
    offset: int = 0,
    total: int | None = None,
    more: str | None = None,
) -> list[Block]:
    """One page of a list: `records` are those from `offset` of `total`; when some come
    after them, a note says how many and `more` (a command) shows the next page."""
    total = offset + len(records) if total is None else total
    heading = f"*{title}*"
    if records and (offset or total > offset + len(records)):
        heading += f" ({offset + 1}–{offset + len(records)} of {total})"
    blocks: list[Block] = [section(heading)]
    if not records:
        note = empty if not offset else f"No more: there are {total}."
        blocks.append(context(note))
        return blocks
    for first in range(0, len(records), LINES_PER_SECTION):
        text = "\n".join(summary_line(r) for r in records[first : first + LINES_PER_SECTION])
        blocks.append(section(text))
    rest = total - offset - len(records)
    if rest > 0:
        note = f"{rest} more" + (f": `{more}` shows the next {min(rest, PAGE)}." if more else ".")
        blocks.append(context(note))
    return blocks


def status_summary_blocks(record: CapacityRecord) -> list[Block]:
    """What someone who is neither its requester nor an approver sees of a request: that
    it exists, and its state."""
    icon = STATE_ICONS[record.state]
    text = (
        f"{icon} Request *{record.id}* is {record.state.label}. Only its requester and the "
        "approvers see its details."
    )
    return [section(text)]


HISTORY_PAGE = 10  # history lines a status shows at a time
SAMPLED = "sampled"  # the audit action of a utilisation sample


def history_lines(history: list[AuditEntry]) -> list[str]:
    """The history as lines, oldest first, each run of samples by gpu-bot folded into one
    (a block sampled for days would otherwise push every decision off the page)."""
    lines: list[str] = []
    run: list[AuditEntry] = []

    def fold() -> None:
        if len(run) == 1:
            lines.append(history_line(run[0]))
        elif run:
            first, last = run[0], run[-1]
            lines.append(
                f"{when(first.at)} → {when(last.at)}: sampled {len(run)} times by {BOT}, "
                f"the last: {esc(last.detail)}"
            )
        run.clear()

    for entry in history:
        if entry.action == SAMPLED and entry.actor == BOT:
            run.append(entry)
            continue
        fold()
        lines.append(history_line(entry))
    fold()
    return lines


def status_blocks(record: CapacityRecord, history: list[AuditEntry], page: int = 1) -> list[Block]:
    """The request in full, and a page of its history (1: the latest lines); a note says
    how many earlier lines are hidden and which command shows them."""
    blocks = request_card(record, with_buttons=False) + ledger_blocks(record)
    lines = history_lines(history)
    end = max(len(lines) - (page - 1) * HISTORY_PAGE, 0)
    shown = lines[max(end - HISTORY_PAGE, 0) : end]
    if shown:
        blocks.append(context("\n".join(shown)))
    hidden = max(end - HISTORY_PAGE, 0)
    if hidden:
        more = f"/gpu status {record.id} history {page + 1}"
        words = "earlier line is" if hidden == 1 else "earlier lines are"
        blocks.append(
            context(
                f"{hidden} {words} hidden: `{more}` shows the next {min(hidden, HISTORY_PAGE)}."
            )
        )
    elif not shown and lines:
        blocks.append(context(f"No more history: it has {len(lines)} lines."))
    return blocks


def ledger_blocks(record: CapacityRecord) -> list[Block]:
    """The request's money entries, oldest first, and what each figure means."""
    if not record.ledger:
        return []
    lines = [f"*Money*: {money_text(record)}"]
    lines += [f"{when(e.at)} {entry_text(e)}" for e in record.ledger[-LEDGER_LINES:]]
    return [section(clip("\n".join(lines), 2900)), context(LEGEND)]


def entry_text(e: LedgerEntry) -> str:
    amount = e.paid if e.entry in (Entry.PAID, Entry.VOIDED) else -e.held
    amount = abs(amount if e.entry is not Entry.HELD else e.held)
    extra = (
        f" (released {usd(dollars(e.released))})" if e.released and e.entry is Entry.PAID else ""
    )
    estimate = " (estimate)" if e.estimate else ""
    return f"{e.entry.value} {usd(dollars(amount))}{estimate}{extra}: {esc(e.why)}"


def history_line(entry: AuditEntry) -> str:
    who = user(entry.actor) if entry.actor != BOT else BOT
    moved = (
        f" ({entry.from_state} → {entry.to_state})" if entry.from_state != entry.to_state else ""
    )
    return f"{when(entry.at)} {esc(entry.action)} by {who}{moved}"


def _a(noun: str) -> str:
    """ "a Capacity Block", "an On-Demand Capacity Reservation"; On-Demand and Spot are
    no thing one buys: "On-Demand instances", "Spot instances"."""
    if noun in (OptionKind.ON_DEMAND.label, OptionKind.SPOT.label):
        return f"{noun} instances"
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _window_launch(record: CapacityRecord) -> str | None:
    """On-Demand and Spot: what to run (or tag), as the mrkdwn to send; None otherwise."""
    option = record.chosen_option
    if option is None or option.kind not in (OptionKind.ON_DEMAND, OptionKind.SPOT):
        return None
    r = record.request
    hint = window_launch_hint(
        option.kind.value,
        record.id,
        r.region,
        r.instance_type,
        r.count,
        sagemaker=r.environment is Environment.SAGEMAKER,
    )
    return f"{hint.title}\n```{esc(hint.command)}```"


def bought_title(record: CapacityRecord) -> str:
    """What the request is, over the window bought (or chosen: a block's offering starts
    at 11:30 UTC, not at the hour asked); the asked window when nothing was chosen."""
    res, offering, r = record.reservation, record.chosen_offering, record.request
    if res is not None:
        count, kind, start, end, region = (
            res.instances,
            res.instance_type,
            res.start,
            res.end,
            res.region,
        )
    elif offering is not None:
        count, kind, start, end = offering.count, r.instance_type, offering.start, offering.end
        region = r.region
    else:
        return request_title(r)
    return f"{count}x {kind} {when(start)} → {when(end)} ({region})"


def requester_update(record: CapacityRecord) -> str:
    """The direct message a requester gets when their request changes state."""
    title = bought_title(record)
    if record.state is State.APPROVED:
        by = ", ".join(user(a.user) for a in record.approvals)
        approved = (
            f":white_check_mark: Your GPU request *{record.id}* ({title}) was approved by {by}."
        )
        launch = _window_launch(record)
        if launch is not None:
            what = record.chosen_option.kind.label if record.chosen_option else "it"
            opens = when(record.request.start)
            return (
                f"{approved} Nothing is bought for {what}: start when the window opens, "
                f"{opens}. {launch}"
            )
        return f"{approved} It is handed to purchasing."
    if record.state is State.REJECTED and record.rejection:
        r = record.rejection
        return (
            f":no_entry: Your GPU request *{record.id}* ({title}) was rejected by "
            f"{user(r.user)}: {quoted(r.reason)}"
        )
    if record.state is State.TIMED_OUT:
        deadline = when(record.approval_deadline) if record.approval_deadline else "the deadline"
        return (
            f":zzz: Your GPU request *{record.id}* ({title}) timed out: nobody decided before "
            f"{deadline}. Ask again with `/gpu reserve`."
        )
    reservation = record.reservation
    if record.state is State.ACTIVE and reservation is not None:
        return f":large_green_circle: Your GPU request *{record.id}* is active. " + usage(
            reservation, record.id
        )
    launch = _window_launch(record)
    if record.state is State.ACTIVE and launch is not None:
        return (
            f":large_green_circle: Your GPU request *{record.id}* ({title}) is active: its "
            f"window is open until {when(record.request.end)}. {launch}"
        )
    if record.state is State.QUOTED and record.failure:
        return (
            f":warning: Your GPU request *{record.id}* ({title}) was not bought. "
            f"{esc(record.failure)} A new quote is below: submit it again for a new approval."
        )
    icon = STATE_ICONS[record.state]
    text = f"{icon} Your GPU request *{record.id}* ({title}) is now {record.state.label}."
    if reservation is not None and record.state is not State.FAILED:
        text += " " + reservation_line(reservation)
    if record.failure and record.state in (State.FAILED, State.PURCHASE_UNKNOWN):
        text += f" {esc(record.failure)}"
    return text
