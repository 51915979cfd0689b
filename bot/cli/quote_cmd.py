"""`gpu-bot quote REQUEST... [--json]`: the comparison from a terminal."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from bot.cli.output import console, fail, print_json, settings_or_exit
from bot.domain.comparison import Option
from bot.domain.cost_chart import cost_chart
from bot.domain.grammar import RequestSyntaxError, render_request, usage
from bot.domain.recommendation import Quote
from bot.domain.request import IncompleteRequest
from bot.domain.words import percent


def register(sub: Any) -> None:
    p = sub.add_parser(
        "quote",
        help="compare On-Demand, Spot, Capacity Blocks and training plans for a request",
        # Not %-formatted by argparse (only help= strings are): one percent sign.
        description="Example: gpu-bot quote 2x p5.48xlarge 3d from tomorrow util=50%",
    )
    p.add_argument("request", nargs="+", help="the request, as for /gpu reserve")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--chart",
        metavar="FILE.png",
        help="also write the cost chart (total cost by utilisation) to FILE.png",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.app import build_services

    if args.chart is not None and not args.chart.lower().endswith(".png"):
        return fail(f"--chart writes a PNG: give a file name ending .png, not {args.chart!r}")
    services = build_services(settings_or_exit())
    text = " ".join(args.request)
    try:
        request = services.quotes.complete(services.quotes.parse(text))
        services.quotes.check_sold(request)
    except RequestSyntaxError as exc:
        return fail(f"{exc}\n\nRequest pieces:\n{usage()}")
    except IncompleteRequest as exc:
        return fail(
            f"missing {', '.join(exc.missing)}. Example: gpu-bot quote 2x p5.48xlarge 3d "
            "from 2026-12-14"
        )
    quote = services.quotes.quote(request)
    if args.chart is not None and (problem := write_chart(quote, args.chart)):
        return fail(problem, 1)
    if args.json:
        print_json(quote_json(quote))
    else:
        print_quote(quote)
    return 0


def write_chart(quote: Quote, path: str) -> str | None:
    """Write the quote's cost chart to `path`; the one-line reason when it cannot be."""
    from bot.adapters.charts.png import render_png

    png = render_png(cost_chart(quote))
    try:
        with open(path, "wb") as out:
            out.write(png)
    except OSError as exc:
        return f"cannot write the chart to {path}: {exc.strerror or exc}"
    return None


def quote_json(quote: Quote) -> dict[str, Any]:
    rec = quote.recommendation
    return {
        "request": quote.request.model_dump(mode="json")
        | {"text": render_request(quote.request.draft())},
        "quoted_at": quote.quoted_at.isoformat(),
        "options": [_option_json(o, quote.request.region) for o in quote.options],
        "recommendation": {
            "kind": rec.kind.value if rec.kind else None,
            "region": rec.region or quote.request.region,
            "reasons": rec.reasons,
            "warnings": rec.warnings,
        },
        "regions": _regions_json(quote),
    }


def _regions_json(quote: Quote) -> list[dict[str, Any]]:
    return [
        {
            "region": r.region,
            "recommended": r.recommended.value if r.recommended else None,
            "total_usd": r.total_usd,
            "start": r.start.isoformat() if r.start else None,
            "options": [_option_json(o, r.region) for o in r.options],
        }
        for r in quote.regions
    ]


def _option_json(o: Option, region: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": o.kind.value,
        "region": region,
        "eligible": o.eligible,
        "reasons": o.reasons,
        "total_usd": o.total_usd,
        "hourly_usd": o.hourly_usd,
        "upfront": o.upfront,
        "interruptible": o.interruptible,
        "guaranteed": o.guaranteed,
        "billed_instances": o.billed_instances,
        # 48 h at 90% is 43.2, not the float product 43.199999999999996.
        "billed_hours": round(o.billed_hours, 2) if o.billed_hours is not None else None,
        "price_source": o.price_source.describe() if o.price_source else None,
    }
    if o.kind.reserved:
        data["break_even_utilization"] = o.break_even_utilization
        data["break_even_against"] = o.break_even_against
    if o.offering is not None:
        data |= {
            "offering_id": o.offering.offering_id,
            "start": o.offering.start.isoformat(),
            "end": o.offering.end.isoformat(),
            "zone": o.offering.zone,
            "parts": [p.model_dump(mode="json") for p in o.offering.parts],
            "alternatives": [a.offering_id for a in o.alternatives],
        }
    return data


def _break_even(o: Option) -> str:
    if o.break_even_utilization is None:
        return "-"
    against = "" if o.break_even_against == "On-Demand" else f" vs {o.break_even_against}"
    return percent(o.break_even_utilization) + against


def print_quote(quote: Quote) -> None:
    from bot.blocks.quote import request_context, request_title

    out = console()
    r = quote.request
    out.print(f"[bold]{request_title(r)}[/bold]\n{request_context(r)}")
    table = Table(show_lines=True)
    for col in ("option", "possible", "total", "per instance-h", "break-even", "notes"):
        table.add_column(col, overflow="fold")
    for o in quote.options:
        star = " *" if o.kind is quote.recommendation.kind else ""
        table.add_row(
            o.kind.label + star,
            "yes" if o.eligible else "no",
            f"${o.total_usd:,.2f}" if o.total_usd is not None else "-",
            f"${o.hourly_usd:,.3f}" if o.hourly_usd is not None else "-",
            _break_even(o),
            "\n".join(o.reasons[:3])
            + (f"\n[dim]{o.price_source.describe()}[/dim]" if o.price_source else ""),
        )
    out.print(table)
    if quote.regions:
        regions = Table(title="regions searched")
        for col in ("region", "recommended", "total", "reserved from"):
            regions.add_column(col)
        for q in quote.regions:
            regions.add_row(
                q.region + (" *" if q.region == quote.request.region else ""),
                q.recommended.label if q.recommended else "nothing fits",
                f"${q.total_usd:,.2f}" if q.total_usd is not None else "-",
                f"{q.start:%Y-%m-%d %H:%M} UTC" if q.start else "-",
            )
        out.print(regions)
    rec = quote.recommendation
    where = f" in {rec.region}" if rec.region else ""
    label = rec.kind.label if rec.kind else "nothing fits"
    out.print(f"[bold]Recommendation: {label}{where}[/bold]")
    for reason in rec.reasons:
        out.print(f"  - {reason}")
    for warning in rec.warnings:
        out.print(f"  [yellow]! {warning}[/yellow]")
