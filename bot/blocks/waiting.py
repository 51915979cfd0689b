"""What waits for an approver, in `/gpu list waiting` and App Home: requests, extensions
and purchases of unknown outcome to decide, and leftovers handed to the approvers, each
with its buttons."""

from __future__ import annotations

from bot.blocks.elements import context, section
from bot.blocks.purchase import unknown_buttons
from bot.blocks.reminders import escalated_cleanup_buttons, extension_card
from bot.blocks.requests import Block, approval_buttons, summary_line
from bot.blocks.text import usd
from bot.domain.cleanup import waits_for_approvers
from bot.domain.extension import ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord

# What waits for an approver, a page at a time: each with its buttons (up to 3 blocks),
# so that a page stays under a message's 50 blocks beside the person's own requests.
WAITING_PAGE = 10
_DECIDED_BY_APPROVERS = (ExtensionStatus.PENDING_APPROVAL, ExtensionStatus.UNKNOWN)


LEFTOVERS_HEADING = "Left after the end, handed to the approvers"


def handed_leftovers(record: CapacityRecord) -> bool:
    """Whether what waits on this record is its leftovers (Clean up now, Keep for a day),
    not a decision to approve: shown under a heading of their own."""
    ext = record.extension
    if ext is not None and ext.status in _DECIDED_BY_APPROVERS:
        return False
    return record.state is not State.PURCHASE_UNKNOWN and waits_for_approvers(record.cleanup)


def waiting_groups(
    shown: list[CapacityRecord], complete: bool
) -> list[tuple[str, list[CapacityRecord]]]:
    """`shown` under their headings: what waits for approval, then leftovers handed to
    the approvers. `complete`: `shown` is all there is, so each heading counts its own."""
    leftovers = [r for r in shown if handed_leftovers(r)]
    decisions = [r for r in shown if not handed_leftovers(r)]
    groups: list[tuple[str, list[CapacityRecord]]] = []
    if decisions or not leftovers:
        groups.append(("Waiting for approval", decisions))
    if leftovers:
        groups.append((LEFTOVERS_HEADING, leftovers))
    if complete:
        return [(f"{title} ({len(records)})", records) for title, records in groups]
    return groups


def waiting_item_blocks(record: CapacityRecord) -> list[Block]:
    """One thing that waits for an approver, with the buttons to decide it: an extension
    of the request when one is asked or its purchase's outcome is unknown, a purchase
    whose outcome is unknown (Check again, Mark failed), leftovers handed to the
    approvers (Clean up now, Keep for a day), else the request itself."""
    ext = record.extension
    if ext is not None and ext.status in _DECIDED_BY_APPROVERS:
        return extension_card(record.id, record.requester, ext).blocks
    line = section(summary_line(record))
    if record.state is State.PURCHASE_UNKNOWN:
        return [line, unknown_buttons(record)]
    if waits_for_approvers(record.cleanup):
        assert record.cleanup is not None
        cost = f"{usd(record.cleanup.usd_per_hour)}/h still billed"
        left = context(f"Ended with resources left, handed to the approvers · {cost}")
        return [line, left, escalated_cleanup_buttons(record.id)]
    return [line, approval_buttons(record)]


def waiting_blocks(
    shown: list[CapacityRecord], total: int, *, offset: int = 0, more: str | None = None
) -> list[Block]:
    """One page (`shown`, from `offset` of `total`) of everything that waits for an
    approver: requests, extensions and purchases of unknown outcome, then leftovers
    handed to the approvers under their own heading, each with its buttons."""
    paged = bool(shown) and (offset > 0 or total > offset + len(shown))
    if not shown:
        note = "Nothing waits for you." if not offset else f"No more: there are {total}."
        return [section("*Waiting for approval*"), context(note)]
    blocks: list[Block] = []
    if paged:
        blocks.append(context(f"Waiting for you: {offset + 1}–{offset + len(shown)} of {total}"))
    for title, records in waiting_groups(shown, complete=False):
        blocks.append(section(f"*{title}*"))
        for record in records:
            blocks += waiting_item_blocks(record)
    rest = total - offset - len(shown)
    if rest > 0:
        note = f"{rest} more" + (
            f": `{more}` shows the next {min(rest, WAITING_PAGE)}." if more else "."
        )
        blocks.append(context(note))
    return blocks
