"""Watches as people read them: the ack, a match (with the comparison for that offering
and Submit for approval), the end, the list with Stop buttons."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from bot.blocks.elements import Block, actions, button, confirmed, context, section
from bot.blocks.ids import ActionId
from bot.blocks.quote import quote_blocks, request_title
from bot.blocks.text import esc, usd, user, when
from bot.blocks.values import WatchRef
from bot.domain.approval import SpendingPolicy
from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from bot.domain.market import Offering
from bot.domain.records import CapacityRecord
from bot.domain.reminders import human_duration
from bot.domain.watch import Watch, WatchState, end_of_day, stopper

MOST_LISTED = 40


def watch_summary(watch: Watch) -> str:
    """What a watch looks for, in one line (user text escaped)."""
    parts = [esc(request_title(watch.request))]
    if watch.flex_hours:
        parts.append(f"start may move {human_duration(timedelta(hours=watch.flex_hours))} later")
    if watch.cap is not None:
        parts.append(f"at most {watch.cap.describe()}")
    parts.append(f"until {until_text(watch.until)}")
    if watch.auto_submit:
        parts.append("submits a match for approval at once")
    return " · ".join(parts)


def until_text(until: datetime) -> str:
    """A watch's end: a whole day (until=DAY, or the default) as that day."""
    if until == end_of_day(until.astimezone(UTC).date()):
        return f"the end of {until:%Y-%m-%d} UTC"
    return when(until)


def watching_text(watch: Watch, regions: tuple[str, ...]) -> str:
    kinds = " or ".join(k.value.replace("-", " ") for k in watch.kinds())
    where = ", ".join(regions)
    return (
        f":eyes: Watching {watch.id}: a {kinds} for {watch_summary(watch)}, in {where}. "
        "You get a DM when one fits (and again only for a better one). "
        f"`/gpu unwatch {watch.id}` stops it."
    )


def match_text(watch: Watch, offering: Offering) -> str:
    return (
        f"Watch {watch.id} found a {offering.kind.label} of {offering.count}x "
        f"{offering.instance_type} from {when(offering.start)}: {usd(offering.upfront_usd)}"
    )


def match_blocks(
    watch: Watch,
    record: CapacityRecord,
    offering: Offering,
    limits: SpendingPolicy,
    problem: str | None,
    withdrawn: Sequence[str] = (),
) -> list[Block]:
    """The match: what was found, the comparison for it, and Submit for approval (or,
    with auto=submit, that it was submitted); `withdrawn`: the earlier matches' requests
    this better one replaced."""
    zone = f" in {esc(offering.zone)}" if offering.zone else ""
    head = (
        f":dart: *Watch {watch.id} found it:* a {offering.kind.label} of {offering.count}x "
        f"`{esc(offering.instance_type)}` from {when(offering.start)} to {when(offering.end)}"
        f"{zone}, {usd(offering.upfront_usd)} upfront (${offering.hourly_usd:,.2f} per "
        f"instance-hour). The fee is checked again when it is bought."
    )
    blocks: list[Block] = [section(head)]
    if withdrawn:
        earlier = ", ".join(withdrawn)
        blocks.append(
            section(
                f":arrows_counterclockwise: Withdrew {earlier}, the earlier match: this one "
                "is better."
            )
        )
    if record.quote is None:
        return blocks
    waiting = record.state is State.QUOTED
    blocks += quote_blocks(record.quote, record.id if waiting else None, limits)
    if record.state is State.PENDING_APPROVAL:
        blocks.append(section(f":inbox_tray: Submitted {record.id} for approval (auto=submit)."))
    elif problem:
        blocks.append(section(f":warning: Not submitted: {esc(problem)}"))
    return blocks


def ended_words(watch: Watch) -> str:
    """Why the watch ended, for mrkdwn: who stopped it as a mention."""
    note = watch.ended_note or "it ended"
    who = stopper(note)
    return f"stopped by {user(who)}" if who else esc(note)


def ended_text(watch: Watch) -> str:
    why = ended_words(watch)
    if watch.sent:
        n = len(watch.sent)
        return f"Watch {watch.id} has ended ({why}); it sent {n} match{'es' if n != 1 else ''}."
    text = f"Watch {watch.id} has ended ({why}) with nothing found that fits."
    seen = watch.best_seen
    if seen is None:
        return text + " AWS offered nothing at all for it."
    return (
        f"{text} The best it saw: {seen.region} from {when(seen.start)}, "
        f"{usd(seen.upfront_usd)} (${seen.hourly_usd:,.2f} per instance-hour), which did "
        f"not fit: {esc(seen.why_not)}."
    )


def watch_line(watch: Watch, everyone: bool) -> str:
    who = f" · <@{watch.watcher}>" if everyone else ""
    sent = len(watch.sent)
    found = f" · {sent} match{'es' if sent != 1 else ''} sent" if sent else ""
    state = watch.state.value
    if watch.state is not WatchState.WATCHING and watch.ended_note:
        state = ended_words(watch)
    return f"*{watch.id}* · {state}{who}{found}\n{watch_summary(watch)}"


def stop_button(watch: Watch) -> Block:
    stop = button("Stop", ActionId.WATCH_STOP, WatchRef(watch.id), "danger")
    return confirmed(
        stop, f"Stop {watch.id}?", "It looks for nothing more; a match sent stays.", "Stop"
    )


def watches_blocks(watches: list[Watch], everyone: bool) -> list[Block]:
    title = "Everyone's watches" if everyone else "Your watches"
    blocks: list[Block] = [section(f"*{title}*")]
    if not watches:
        example = "`/gpu watch 8x p5.48xlarge 3d from 2026-12-14 flex=7d`"
        return [*blocks, section(f"No watches. Start one with {example}.")]
    for watch in watches[:MOST_LISTED]:
        blocks.append(section(watch_line(watch, everyone)))
        if watch.state is WatchState.WATCHING:
            blocks.append(actions(f"watch:{watch.id}", stop_button(watch)))
    if len(watches) > MOST_LISTED:
        blocks.append(context(f"{len(watches) - MOST_LISTED} older watches not shown."))
    return blocks


def watch_status_blocks(
    watch: Watch, history: list[AuditEntry], matches: Sequence[CapacityRecord] = ()
) -> list[Block]:
    """The watch, what it saw, the requests its matches made and its history."""
    blocks: list[Block] = [section(watch_line(watch, everyone=False))]
    if matches:
        made = " · ".join(f"*{r.id}* {r.state.label}" for r in matches)
        blocks.append(section(f"Matches, as the requests they made: {made}"))
    if watch.best_seen is None and watch.state is WatchState.WATCHING:
        blocks.append(context("Nothing offered for it yet: it keeps looking."))
    if watch.best_seen is not None:
        seen = watch.best_seen
        fits = "fits" if not seen.why_not else f"does not fit: {esc(seen.why_not)}"
        blocks.append(
            context(
                f"Best seen: {seen.region} from {when(seen.start)}, {usd(seen.upfront_usd)} "
                f"({fits})"
            )
        )
    for entry in history[-10:]:
        detail = entry.detail if len(entry.detail) <= 80 else entry.detail[:60] + "…"
        blocks.append(context(f"{when(entry.at)} · {esc(entry.action)} · {esc(detail)}"))
    if watch.ended_note:
        blocks.append(context(f"Ended: {ended_words(watch)}"))
    if watch.state is WatchState.WATCHING:
        blocks.append(actions(f"watch:{watch.id}", stop_button(watch)))
    return blocks


def home_watch_blocks(watches: list[Watch], most: int = 5) -> list[Block]:
    """App Home: the user's live watches, each with Stop."""
    blocks: list[Block] = [section("*Your watches*")]
    for watch in watches[:most]:
        blocks.append(section(watch_line(watch, everyone=False)))
        blocks.append(actions(f"watch:{watch.id}", stop_button(watch)))
    if len(watches) > most:
        blocks.append(context("`/gpu watches` lists every one."))
    return blocks
