"""`gpu-bot outlook COUNTx TYPE DURATION [region=…|region=any] [days=N] [--json]
[--chart FILE.png]`: what this account's offering searches saw for a shape."""

from __future__ import annotations

import argparse
from typing import Any

from bot.blocks.outlook import outlook_lines
from bot.cli.output import console, fail, print_json, settings_or_exit
from bot.domain.grammar import RequestSyntaxError
from bot.domain.outlook import outlook_chart, outlook_dict


def register(sub: Any) -> None:
    p = sub.add_parser(
        "outlook",
        help="how often a block or plan of a shape was seen, how far ahead, at what price",
        description="Example: gpu-bot outlook 16x p5.48xlarge 3d region=any days=30",
    )
    p.add_argument("shape", nargs="+", help="COUNTx TYPE DURATION [region=…] [days=N]")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--chart", metavar="FILE.png", help="also write the outlook chart")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.app import build_services

    if args.chart is not None and not args.chart.lower().endswith(".png"):
        return fail(f"--chart writes a PNG: give a file name ending .png, not {args.chart!r}")
    services = build_services(settings_or_exit(), chart_renderer=None)
    try:
        query = services.outlook.parse(" ".join(args.shape))
    except RequestSyntaxError as exc:
        return fail(str(exc))
    region = query.region or services.settings.aws_region
    found = services.outlook.answer(query)
    title = query.title(region)
    if args.chart is not None:
        from bot.adapters.charts.outlook_png import render_outlook_png

        try:
            with open(args.chart, "wb") as out:
                out.write(render_outlook_png(outlook_chart(title, found)))
        except OSError as exc:
            return fail(f"cannot write the chart to {args.chart}: {exc.strerror or exc}", 1)
    if args.json:
        print_json(outlook_dict(title, found))
    else:
        for line in outlook_lines(title, found):
            console().print(line, markup=False, highlight=False)
    return 0
