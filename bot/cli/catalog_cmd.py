"""`gpu-bot catalog`: the supported instance types and the dated price catalog, for one
region, checked as a quote checks it: the region must be AWS's, and a type EC2 does not
sell there (DescribeInstanceTypeOfferings) has neither Capacity Blocks nor plans there."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.cli.output import console, fail, print_json, settings_or_exit
from bot.domain.catalog import (
    CatalogPrice,
    InstanceType,
    OfferingAvailability,
    PriceKind,
    UnknownInstanceType,
)
from bot.domain.grammar import RequestSyntaxError

PRICE_KINDS = (PriceKind.ON_DEMAND, PriceKind.CAPACITY_BLOCK, PriceKind.TRAINING_PLAN)
# One instance type: its entry, whether EC2 sells it in the region, its catalog prices.
Row = tuple[InstanceType, bool | None, dict[str, CatalogPrice | None]]


def register(sub: Any) -> None:
    p = sub.add_parser("catalog", help="list supported instance types and catalog prices")
    p.add_argument("instance", nargs="?", help="one instance type, e.g. p5.48xlarge")
    p.add_argument("--region", help="region for prices and availability (default AWS_REGION)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.app import build_services

    settings = settings_or_exit()
    services = build_services(settings)
    catalog = services.catalog
    region = args.region or settings.aws_region
    try:
        services.quotes.check_region(region)
        names = [catalog.instance(args.instance).instance_type] if args.instance else None
    except RequestSyntaxError as exc:
        return fail(str(exc))
    except UnknownInstanceType as exc:
        return fail(str(exc))
    rows: list[Row] = []
    for name in names or catalog.instance_types:
        entry = catalog.instance(name)
        sold = services.quotes.sold_in(name, region)
        prices = {kind.value: catalog.price(kind, name, region) for kind in PRICE_KINDS}
        rows.append((entry, sold, prices))
    if args.json:
        print_json([_json(entry, sold, ps, region) for entry, sold, ps in rows])
        return 0
    out = console()
    out.print(_table(rows, region))
    if names:
        _details(out, rows[0], region)
    return 0


def _table(rows: list[Row], region: str) -> Table:
    """One row per instance type: what it is, where it is sold, its catalog prices."""
    table = Table(
        title=f"gpu-bot catalog: {region}; prices in USD per instance-hour (* estimate; "
        f"(region): that region's figure, the catalog has none for {region})"
    )
    for col in (
        "type",
        "accelerators",
        "MIG",
        f"sold in {region}",
        "Capacity Blocks",
        "training plans",
        "On-Demand",
        "Capacity Block",
        "training plan",
    ):
        table.add_column(col)
    for entry, sold, ps in rows:
        table.add_row(
            entry.instance_type,
            f"{entry.gpus}x {entry.gpu_model}",
            entry.mig_family or "-",
            {True: "yes", False: "no", None: "unknown"}[sold],
            _here(entry.capacity_blocks, sold, region),
            _here(entry.training_plans, sold, region),
            *(_price(ps[k.value], region) for k in PRICE_KINDS),
        )
    return table


def _details(out: Console, row: Row, region: str) -> None:
    """For one asked type: where it is sold and offered, and where each price is from."""
    entry, sold, ps = row
    if sold is False:
        out.print(
            f"{entry.instance_type} is not sold in {region} (EC2 DescribeInstanceTypeOfferings)"
        )
    for what, availability in (
        ("Capacity Blocks", entry.capacity_blocks),
        ("training plans", entry.training_plans),
    ):
        if availability.offered and not offered_here(availability, sold, region):
            out.print(f"{what} for {entry.instance_type}: {', '.join(availability.regions)}")
    for p in ps.values():
        if p:
            out.print(f"{p.kind.value}: {p.usd_per_hour} USD/h from {p.describe()}")


def offered_here(availability: OfferingAvailability, sold: bool | None, region: str) -> bool:
    """Capacity Blocks (or plans) for a type in a region: offered for it, in a region the
    catalog lists for it, and the type sold there at all."""
    return availability.offered and region in availability.regions and sold is not False


def _here(availability: OfferingAvailability, sold: bool | None, region: str) -> str:
    if offered_here(availability, sold, region):
        return "yes"
    return "not here" if availability.offered else "no"


def _json(
    entry: InstanceType, sold: bool | None, prices: dict[str, CatalogPrice | None], region: str
) -> dict[str, Any]:
    return entry.model_dump(mode="json") | {
        "region": region,
        "sold_in_region": sold,
        "capacity_blocks_in_region": offered_here(entry.capacity_blocks, sold, region),
        "training_plans_in_region": offered_here(entry.training_plans, sold, region),
        "prices": {k: p.model_dump(mode="json") if p else None for k, p in prices.items()},
    }


def _price(p: CatalogPrice | None, region: str) -> str:
    if p is None:
        return "-"
    text = f"{p.usd_per_hour:.3f}{'*' if p.estimate else ''}"
    return text if p.region == region else f"{text} ({p.region})"
