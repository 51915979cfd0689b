"""`gpu-bot spend --month 2026-12 [--team T] [--csv|--json]`: what each team holds and paid
in a month, how much of it was used, and what On-Demand would have cost for the hours used:
the ledger's kept figures (bot/domain/money.py), every request of the month."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from bot.blocks.money import LEGEND
from bot.blocks.spend import row_money
from bot.cli.output import console, fail, print_json, settings_or_exit, write_csv
from bot.domain.budgets import month_of, parse_month
from bot.domain.ledger import SpendRow
from bot.domain.money import dollars
from bot.domain.spend import SpendReport
from bot.domain.words import percent

EXIT_USAGE = 2
CSV_COLUMNS = (
    "request",
    "team",
    "requester",
    "option",
    "state",
    "start",
    "held_usd",
    "paid_usd",
    "paid_is_estimate",
    "aws_billing",
    "used_pct",
    "on_demand_for_hours_used_usd",
)


def register(sub: Any) -> None:
    spend = sub.add_parser("spend", help="a month's spend per request and per team (from Redis)")
    spend.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    spend.add_argument("--team", help="only this team (a GPU_BOT_TEAMS name, or a user id)")
    shape = spend.add_mutually_exclusive_group()
    shape.add_argument("--csv", action="store_true", help="one row per request, as CSV")
    shape.add_argument("--json", action="store_true", help="machine-readable output")
    spend.set_defaults(run=run_spend)


def row_json(r: SpendRow) -> dict[str, Any]:
    """One request's kept figures; the CSV has the same columns."""
    return {
        "request": r.request_id,
        "team": r.team,
        "requester": r.requester,
        "option": r.option,
        "state": r.state,
        "start": r.start.isoformat(),
        "held_usd": dollars(r.held),
        "paid_usd": dollars(r.paid),
        "paid_is_estimate": r.estimate,
        "aws_billing": r.billing,
        "used_pct": r.used_pct,
        "on_demand_for_hours_used_usd": dollars(r.measured) if r.measured else None,
    }


def report_json(report: SpendReport) -> dict[str, Any]:
    return {
        "month": report.month,
        "team": report.team,
        "total_usd": report.total_usd,
        "requests": [row_json(r) for r in report.rows],
        "teams": [
            {
                "team": t.team,
                "held_usd": t.held_usd,
                "paid_usd": t.paid_usd,
                "committed_usd": t.committed_usd,
                "waiting_for_approvers_usd": t.asked_usd,
                "on_demand_for_hours_measured_usd": t.measured_usd,
                "budget_usd": t.budget_usd,
                "requests": t.requests,
            }
            for t in report.teams
        ],
        "models": [
            {
                "deployment": m.deployment_id,
                "request": m.request_id,
                "team": m.team,
                "model": m.model,
                "share": m.share,
                "hours": round(m.hours, 2),
                "usd": m.usd,
                "usd_per_hour": m.usd_per_hour,
            }
            for m in report.models
        ],
    }


def _print_text(report: SpendReport) -> None:
    out = console()
    scope = f" for {report.team}" if report.team else ""
    out.print(
        f"Spend in {report.month}{scope}: ${report.total_usd:,.2f} held or paid", markup=False
    )
    for r in report.rows:
        used = "not measured" if r.used_pct is None else f"{percent(r.used_pct / 100)} used"
        od = f"  On-Demand for the hours used ${dollars(r.measured):,.2f}" if r.measured else ""
        out.print(
            f"{r.request_id}  {r.team}  {r.requester}  {r.option}  {row_money(r)}  {used}{od}",
            markup=False,
        )
    for t in report.teams:
        budget = "" if t.budget_usd is None else f" of ${t.budget_usd:,.2f}"
        out.print(
            f"team {t.team}: held ${t.held_usd:,.2f}, paid ${t.paid_usd:,.2f}: "
            f"${t.committed_usd:,.2f}{budget}",
            markup=False,
        )
    out.print(LEGEND, markup=False)
    for m in report.models:
        out.print(
            f"{m.deployment_id} ({m.request_id}) {m.model}: ${m.usd:,.2f} ({m.share:.0%})",
            markup=False,
        )


def run_spend(args: argparse.Namespace) -> int:
    try:
        month = parse_month(args.month) if args.month else month_of(datetime.now(UTC))
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    from bot.adapters.store import open_store
    from bot.adapters.store.deployments import RedisDeployments
    from bot.services.spending import SpendLedger, UnknownTeam

    settings = settings_or_exit()
    store = open_store(settings.redis_url, settings.namespace)
    ledger = SpendLedger(
        store,
        settings.teams,
        settings.budgets,
        settings.over_budget,
        now=lambda: datetime.now(UTC),
    )
    store.index_ledger(datetime.now(UTC))
    try:
        report = ledger.report(month, args.team, RedisDeployments(store).deployments_of, rows=None)
    except UnknownTeam as exc:
        return fail(str(exc), EXIT_USAGE)
    if args.json:
        print_json(report_json(report))
    elif args.csv:
        docs = (row_json(r) for r in report.rows)
        write_csv(CSV_COLUMNS, (["" if d[c] is None else d[c] for c in CSV_COLUMNS] for d in docs))
    else:
        _print_text(report)
    return 0
