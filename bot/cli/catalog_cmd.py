"""`gpu-bot catalog`: the supported instance types and the dated price catalog."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from bot.cli.output import console, fail, print_json
from bot.domain.catalog import CatalogPrice, PriceKind, UnknownInstanceType, default_catalog


def register(sub: Any) -> None:
    p = sub.add_parser("catalog", help="list supported instance types and catalog prices")
    p.add_argument("instance", nargs="?", help="one instance type, e.g. p5.48xlarge")
    p.add_argument("--region", default="us-east-1", help="region for prices (us-east-1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    catalog = default_catalog()
    try:
        names = [catalog.instance(args.instance).instance_type] if args.instance else None
    except UnknownInstanceType as exc:
        return fail(str(exc))
    rows = []
    for name in names or catalog.instance_types:
        entry = catalog.instance(name)
        prices = {
            kind.value: catalog.price(kind, name, args.region)
            for kind in (PriceKind.ON_DEMAND, PriceKind.CAPACITY_BLOCK, PriceKind.TRAINING_PLAN)
        }
        rows.append((entry, prices))
    if args.json:
        print_json(
            [
                entry.model_dump(mode="json")
                | {"prices": {k: p.model_dump(mode="json") if p else None for k, p in ps.items()}}
                for entry, ps in rows
            ]
        )
        return 0
    table = Table(
        title=f"gpu-bot catalog: {args.region} prices, USD per instance-hour "
        f"(* estimate; (region): that region's figure, the catalog has none for {args.region})"
    )
    for col in (
        "type",
        "accelerators",
        "MIG",
        "Capacity Blocks",
        "training plans",
        "On-Demand",
        "Capacity Block",
        "training plan",
    ):
        table.add_column(col)
    for entry, ps in rows:
        table.add_row(
            entry.instance_type,
            f"{entry.gpus}x {entry.gpu_model}",
            entry.mig_family or "-",
            "yes" if entry.capacity_blocks.offered else "no",
            "yes" if entry.training_plans.offered else "no",
            *(
                _price(ps[k.value], args.region)
                for k in (PriceKind.ON_DEMAND, PriceKind.CAPACITY_BLOCK, PriceKind.TRAINING_PLAN)
            ),
        )
    out = console()
    out.print(table)
    if names:
        for p in rows[0][1].values():
            if p:
                out.print(f"{p.kind.value}: {p.usd_per_hour} USD/h from {p.describe()}")
    return 0


def _price(p: CatalogPrice | None, region: str) -> str:
    if p is None:
        return "-"
    text = f"{p.usd_per_hour:.3f}{'*' if p.estimate else ''}"
    return text if p.region == region else f"{text} ({p.region})"
