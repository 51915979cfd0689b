"""Budgets and spend as Block Kit: the budget line on approval cards, the spend report
(`/gpu spend`) and the monthly summary in the approval channel."""

from __future__ import annotations

from typing import Any

from bot.blocks.elements import context, section
from bot.blocks.money import LEGEND, figures
from bot.blocks.text import clip, esc, usd, user
from bot.domain.budgets import BudgetCheck
from bot.domain.ledger import SpendRow
from bot.domain.money import Money, dollars
from bot.domain.spend import SpendReport, TeamTotal
from bot.domain.words import percent

Block = dict[str, Any]
MAX_ROWS = 40  # request lines shown in Slack; the CLI shows every one


def budget_line(check: BudgetCheck, what: str = "request") -> str:
    """The team's month on an approval card: what was committed, and where this takes it."""
    icon = ":warning:" if check.over else ":moneybag:"
    line = f"{icon} {esc(check.line(what))}"
    if check.over:
        line += " · *over budget*: needs two approvers"
    return line


def used_text(row: SpendRow) -> str:
    return "not measured" if row.used_pct is None else f"{percent(row.used_pct / 100)} used"


def row_money(row: SpendRow) -> str:
    """The row's figures with their labels (as bot/blocks/money.py words a record's)."""
    money = Money(held=row.held, paid=row.paid, estimate=row.estimate)
    return " · ".join(figures(money, row.billing)) or f"{usd(0)}"


def _row_line(row: SpendRow, mention: bool) -> str:
    who = user(row.requester) if mention else f"`{esc(row.requester)}`"
    line = (
        f"• {row.request_id} {esc(row.team)} · {who} · {row.option} · "
        f"{row_money(row)} · {used_text(row)}"
    )
    if row.measured:
        line += f" · On-Demand for the hours used {usd(dollars(row.measured))} (estimate)"
    return line


def team_line(t: TeamTotal) -> str:
    line = f"• *{esc(t.team)}* held {usd(t.held_usd)} · paid {usd(t.paid_usd)}"
    if t.budget_usd is not None:
        line += f" · {usd(t.committed_usd)} of {usd(t.budget_usd)} budget"
        if t.left_usd is not None and t.left_usd < 0:
            line += f" (*{usd(-t.left_usd)} over*)"
    if t.asked_usd:
        line += f" · {usd(t.asked_usd)} waiting for approvers"
    if t.measured_usd:
        line += f" · On-Demand for the hours measured {usd(t.measured_usd)} (estimate)"
    return line


def spend_blocks(report: SpendReport, mention: bool = True) -> list[Block]:
    """The report; `mention`: requesters as mentions (not in a channel post, where each
    would be notified every month)."""
    scope = f" for {esc(report.team)}" if report.team else ""
    title = f"GPU spend in {report.month}{scope}: {usd(report.total_usd)} held or paid"
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, 150)}}
    ]
    if report.teams:
        teams = [team_line(t) for t in report.teams]
        blocks.append(section(clip("*Teams*\n" + "\n".join(teams), 2900)))
    if not report.rows:
        blocks.append(section("Nothing approved in that month."))
    else:
        lines = [_row_line(r, mention) for r in report.rows[:MAX_ROWS]]
        more = report.row_count - min(len(report.rows), MAX_ROWS)
        if more > 0:
            month = f" --month {report.month}"
            team = f" --team {report.team}" if report.team else ""
            lines.append(f"…and {more} more: `gpu-bot spend{month}{team}` lists every one")
        blocks.append(section(clip("*Requests*\n" + "\n".join(lines), 2900)))
    if report.models:
        models = [
            f"• {m.deployment_id} ({m.request_id}) {esc(m.model)}: {usd(m.usd)} "
            f"({m.share:.0%} of the endpoint for {m.hours:,.1f} h)"
            for m in report.models[:MAX_ROWS]
        ]
        blocks.append(
            section(clip("*MIG deployments, cost per model*\n" + "\n".join(models), 2900))
        )
    blocks.append(
        context(
            "A request counts in the month its window starts, from its approval. " + LEGEND + "."
        )
    )
    return blocks


def spend_fallback(report: SpendReport) -> str:
    return f"GPU spend in {report.month}: {usd(report.total_usd)} held or paid"
