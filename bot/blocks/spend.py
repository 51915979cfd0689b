"""Budgets and spend as Block Kit: the budget line on approval cards, the spend report
(`/gpu spend`) and the monthly summary in the approval channel."""

from __future__ import annotations

from typing import Any

from bot.blocks.elements import context, section
from bot.blocks.text import clip, esc, usd, user
from bot.domain.budgets import BudgetCheck
from bot.domain.spend import SpendReport, SpendRow

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
    return "not measured" if row.used_pct is None else f"{row.used_pct:.0f}% used"


def _row_line(row: SpendRow, mention: bool) -> str:
    who = user(row.requester) if mention else f"`{esc(row.requester)}`"
    line = (
        f"• {row.request_id} {esc(row.team)} · {who} · {row.option} · "
        f"{usd(row.committed_usd)} · {used_text(row)}"
    )
    if row.on_demand_usd is not None:
        line += f" · On-Demand for the hours used {usd(row.on_demand_usd)}"
    return line


def spend_blocks(report: SpendReport, mention: bool = True) -> list[Block]:
    """The report; `mention`: requesters as mentions (not in a channel post, where each
    would be notified every month)."""
    scope = f" for {esc(report.team)}" if report.team else ""
    title = f"GPU spend in {report.month}{scope}: {usd(report.total_usd)} committed"
    blocks: list[Block] = [{"type": "header", "text": {"type": "plain_text", "text": title}}]
    if not report.rows:
        blocks.append(section("Nothing committed in that month."))
        return blocks
    teams = []
    for t in report.teams:
        line = f"• *{esc(t.team)}* {usd(t.committed_usd)}"
        if t.budget_usd is not None:
            line += f" of {usd(t.budget_usd)} budget"
        if t.on_demand_usd:
            line += f" · On-Demand for the hours measured {usd(t.on_demand_usd)}"
        teams.append(line)
    blocks.append(section(clip("*Teams*\n" + "\n".join(teams), 2900)))
    lines = [_row_line(r, mention) for r in report.rows[:MAX_ROWS]]
    if len(report.rows) > MAX_ROWS:
        lines.append(f"…and {len(report.rows) - MAX_ROWS} more: `gpu-bot spend --month`")
    blocks.append(section(clip("*Requests*\n" + "\n".join(lines), 2900)))
    if report.models:
        models = [
            f"• {m.deployment_id} ({m.request_id}) {esc(m.model)}: {usd(m.usd)} "
            f"({m.share:.0%} of the endpoint)"
            for m in report.models[:MAX_ROWS]
        ]
        blocks.append(
            section(clip("*MIG deployments, cost per model*\n" + "\n".join(models), 2900))
        )
    blocks.append(
        context("A request counts in the month its window starts; committed is what was paid.")
    )
    return blocks


def spend_fallback(report: SpendReport) -> str:
    return f"GPU spend in {report.month}: {usd(report.total_usd)} committed"
