"""`gpu-bot spend --month 2026-12 [--team T] [--csv|--json]`: what each team committed in
a month, how much of it was used, and what On-Demand would have cost for the hours used."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import UTC, datetime
from typing import Any

from bot.cli.output import console, fail, print_json, settings_or_exit
from bot.domain.budgets import month_of, parse_month
from bot.domain.spend import SpendReport

EXIT_USAGE = 2
CSV_COLUMNS = (
    "request",
    "team",
    "requester",
    "option",
    "committed_usd",
    "used_pct",
    "on_demand_usd",
)


def register(sub: Any) -> None:
    spend = sub.add_parser("spend", help="a month's spend per request and per team (from Redis)")
    spend.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    spend.add_argument("--team", help="only this team (a GPU_BOT_TEAMS name, or a user id)")
    shape = spend.add_mutually_exclusive_group()
    shape.add_argument("--csv", action="store_true", help="one row per request, as CSV")
    shape.add_argument("--json", action="store_true", help="machine-readable output")
    spend.set_defaults(run=run_spend)


def report_json(report: SpendReport) -> dict[str, Any]:
    return {
        "month": report.month,
        "team": report.team,
        "total_usd": report.total_usd,
        "requests": [
            {
                "request": r.request_id,
                "team": r.team,
                "requester": r.requester,
                "option": r.option,
                "committed_usd": r.committed_usd,
                "used_pct": r.used_pct,
                "on_demand_usd": r.on_demand_usd,
            }
            for r in report.rows
        ],
        "teams": [
            {
                "team": t.team,
                "committed_usd": t.committed_usd,
                "on_demand_usd": t.on_demand_usd,
                "budget_usd": t.budget_usd,
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
                "usd": m.usd,
                "usd_per_hour": m.usd_per_hour,
            }
            for m in report.models
        ],
    }


def _print_text(report: SpendReport) -> None:
    out = console()
    scope = f" for {report.team}" if report.team else ""
    out.print(f"Spend in {report.month}{scope}: ${report.total_usd:,.2f} committed", markup=False)
    for r in report.rows:
        used = "not measured" if r.used_pct is None else f"{r.used_pct:.1f}% used"
        od = (
            ""
            if r.on_demand_usd is None
            else f"  On-Demand for the hours used ${r.on_demand_usd:,.2f}"
        )
        out.print(
            f"{r.request_id}  {r.team}  {r.requester}  {r.option}  "
            f"${r.committed_usd:,.2f}  {used}{od}",
            markup=False,
        )
    for t in report.teams:
        budget = "" if t.budget_usd is None else f" of ${t.budget_usd:,.2f}"
        out.print(f"team {t.team}: ${t.committed_usd:,.2f}{budget}", markup=False)
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
    from bot.services.spending import SpendLedger

    settings = settings_or_exit()
    store = open_store(settings.redis_url, settings.namespace)
    ledger = SpendLedger(store, settings.teams, settings.budgets, settings.over_budget)
    report = ledger.report(month, args.team, RedisDeployments(store).deployments_of)
    if args.json:
        print_json(report_json(report))
    elif args.csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(CSV_COLUMNS)
        for r in report.rows:
            writer.writerow(
                [
                    r.request_id,
                    r.team,
                    r.requester,
                    r.option,
                    f"{r.committed_usd:.2f}",
                    "" if r.used_pct is None else f"{r.used_pct:.1f}",
                    "" if r.on_demand_usd is None else f"{r.on_demand_usd:.2f}",
                ]
            )
    else:
        _print_text(report)
    return 0
