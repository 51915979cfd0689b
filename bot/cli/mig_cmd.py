"""`gpu-bot mig`: check a MIG partition layout, or plan one for a set of models.

Exit status: 0 valid layout / a plan fits, 1 invalid / nothing fits, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.cli.output import console, fail, print_json
from bot.domain.catalog import UnknownInstanceType, default_catalog
from bot.domain.mig import (
    EndpointKind,
    LayoutCheck,
    ModelError,
    Plan,
    UnknownProfile,
    check_layout,
    parse_models,
    plan_layout,
)
from bot.domain.mig.planner import MODEL_FORM
from bot.domain.mig.profiles import PROFILES_FORM


def register(sub: Any) -> None:
    p = sub.add_parser("mig", help="check or plan MIG GPU partitions for inference components")
    actions = p.add_subparsers(dest="mig_action", metavar="ACTION", required=True)

    check = actions.add_parser("check", help="check one per-GPU layout of MIG profiles")
    check.add_argument("instance", help="instance type, e.g. p4d.24xlarge or ml.p4d.24xlarge")
    check.add_argument(
        "profiles", nargs="+", metavar="PROFILE", help=f"the layout: {PROFILES_FORM}"
    )
    check.add_argument("--ami", metavar="VERSION", help="the variant's InferenceAmiVersion")
    check.add_argument(
        "--endpoint",
        type=EndpointKind,
        choices=list(EndpointKind),
        default=EndpointKind.INFERENCE_COMPONENTS,
        help="kind of endpoint (inference-components)",
    )
    check.add_argument("--count", type=int, default=1, help="instances in the endpoint (1)")
    check.add_argument("--json", action="store_true", help="print JSON")
    check.set_defaults(run=run_check)

    plan = actions.add_parser("plan", help="propose the layout that fits these models best")
    plan.add_argument("instance", help="instance type, e.g. p4d.24xlarge")
    plan.add_argument(
        "--model",
        action="extend",
        nargs="+",
        required=True,
        metavar="NAME=MEMORY[xCOPIES]",
        help=MODEL_FORM,
    )
    plan.add_argument("--region", default="us-east-1", help="region for prices (us-east-1)")
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(run=run_plan)


def run_check(args: argparse.Namespace) -> int:
    if args.count < 1:
        return fail("--count must be at least 1")
    try:
        instance = default_catalog().instance(args.instance)
        result = check_layout(
            instance, args.profiles, ami=args.ami, endpoint=args.endpoint, instance_count=args.count
        )
    except (UnknownInstanceType, UnknownProfile) as exc:
        return fail(str(exc))
    if args.json:
        print_json(result.to_json())
    else:
        _print_check(console(), result)
    return 0 if result.valid else 1


def run_plan(args: argparse.Namespace) -> int:
    catalog = default_catalog()
    try:
        instance = catalog.instance(args.instance)
        models = parse_models(args.model)
        plan = plan_layout(instance, models, catalog, args.region)
    except (UnknownInstanceType, ModelError) as exc:
        return fail(str(exc))
    if args.json:
        print_json(plan.to_json())
    else:
        _print_plan(console(), plan)
    return 0 if plan.fits else 1


def _print_check(out: Console, check: LayoutCheck) -> None:
    inst = check.instance
    verdict = "valid" if check.valid else "invalid"
    _say(out, f"{inst.instance_type} ({inst.gpus}x {inst.gpu_model}): {verdict} MIG layout")
    for error in check.errors:
        _say(out, f"  - {error}")
    if check.valid:
        _print_slices(out, check)
    if check.family is None:
        return
    if check.valid:  # an invalid layout has no partitions to count
        by_profile = ", ".join(f"{n} x {name}" for name, n in check.partitions_by_profile().items())
        instances = f"{check.instance_count} instance{'s' if check.instance_count > 1 else ''}"
        _say(
            out,
            f"partitions: {check.partitions_per_gpu} per GPU, {check.partitions_total} per "
            f"endpoint of {instances} ({by_profile})",
        )
        _print_request_fields(out, check)
    if check.family.note:
        _say(out, f"note: {check.family.note}")


def _print_slices(out: Console, check: LayoutCheck) -> None:
    family = check.family
    assert family is not None
    table = Table(box=None, pad_edge=False)
    for col in ("memory slices", "partition", "compute slices"):
        table.add_column(col)
    for p in check.placement:
        span = str(p.start) if p.start == p.end else f"{p.start}-{p.end}"
        table.add_row(span, p.profile.sagemaker_name, f"{p.profile.compute_slices}")
    for start, end in _free_runs(check):
        table.add_row(str(start) if start == end else f"{start}-{end}", "(unused)", "")
    out.print(table)
    _say(
        out,
        f"unused per GPU: {check.unused_compute_slices} of {family.compute_slices} compute "
        f"slices, {check.unused_memory_slices} of {family.memory_slices} memory slices",
    )


def _free_runs(check: LayoutCheck) -> list[tuple[int, int]]:
    """Runs of memory slices no partition holds, as (first, last)."""
    assert check.family is not None
    taken = {i for p in check.placement for i in range(p.start, p.end + 1)}
    runs: list[tuple[int, int]] = []
    for i in range(check.family.memory_slices):
        if i in taken:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _print_request_fields(out: Console, check: LayoutCheck) -> None:
    for key, value in check.production_variant_fields().items():
        _say(out, f"{key}={json.dumps(value)}")
    _say(out, "per inference component, with its MinMemoryRequiredInMb:")
    for name in dict.fromkeys(check.profiles):
        _say(out, f"  ComputeResourceRequirements={json.dumps(check.component_requirements(name))}")


def _print_plan(out: Console, plan: Plan) -> None:
    inst = plan.instance
    check = plan.check
    if check is None:
        _say(out, f"{inst.instance_type} ({inst.gpus}x {inst.gpu_model}): no MIG layout fits")
        for reason in plan.reasons:
            _say(out, f"  - {reason}")
        _say(out, "what would:")
        for suggestion in plan.suggestions:
            _say(out, f"  - {suggestion}")
        return
    layout = " + ".join(check.profiles)
    _say(out, f"{inst.instance_type} ({inst.gpus}x {inst.gpu_model}): {layout} per GPU")
    needs = {m.name: m.memory_gb for m in plan.models}
    table = Table(box=None, pad_edge=False)
    for col in ("model", "needs", "copies", "partition"):
        table.add_column(col)
    for a in plan.assignments:
        table.add_row(a.model, f"{needs[a.model]:g} GB", str(a.copies), a.profile.sagemaker_name)
    out.print(table)
    _say(
        out,
        f"waste: {plan.waste_gb:g} GB of memory no model can use, "
        f"{plan.waste_compute_slices} compute slices outside any partition",
    )
    _print_chargeback(out, plan)
    _print_request_fields(out, check)
    if check.family and check.family.note:
        _say(out, f"note: {check.family.note}")


def _print_chargeback(out: Console, plan: Plan) -> None:
    price = plan.price
    title = "chargeback by compute slices held"
    if price:
        estimate = " (estimate)" if price.estimate else ""
        title += f" of {price.usd_per_hour:g} USD/h{estimate}"
    _say(out, f"{title}:")
    table = Table(box=None, pad_edge=False)
    for col in ("model", "compute slices", "share", "USD/h"):
        table.add_column(col)
    for share in plan.chargeback:
        usd = "-" if share.usd_per_hour is None else f"{share.usd_per_hour:.4f}"
        table.add_row(share.model, str(share.compute_slices), f"{share.fraction:.1%}", usd)
    out.print(table)
    _say(out, f"price: {price.describe()}" if price else "price: none in the catalog")


def _say(out: Console, text: str) -> None:
    # Messages echo user input (AMI names): print them as text, never as rich markup.
    # Never wrapped: the request fields must stay copyable.
    out.print(text, markup=False, soft_wrap=True)
