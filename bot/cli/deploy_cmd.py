"""`gpu-bot deploy plan`: what a deployment onto a training plan would send, without
calling AWS, for review before a real run.

Exit status: 0 valid, 1 a rule refuses it, 2 bad input (as `gpu-bot mig check`).
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.cli.output import console, fail, print_json
from bot.domain.catalog import UnknownInstanceType, default_catalog
from bot.domain.deployment import (
    DeploymentAsk,
    DeploymentPlan,
    Refusal,
    ReservedPlan,
    Rule,
    plan_deployment,
)
from bot.domain.mig import ModelError, UnknownProfile, parse_models
from bot.domain.mig.planner import MODEL_FORM
from bot.domain.mig.profiles import PROFILES_FORM

DEFAULT_NAME = "gpu-bot-endpoint"


def register(sub: Any) -> None:
    p = sub.add_parser("deploy", help="SageMaker endpoints on reserved capacity")
    actions = p.add_subparsers(dest="deploy_action", metavar="ACTION", required=True)
    plan = actions.add_parser(
        "plan", help="print the requests a deployment would send (no AWS call)"
    )
    plan.add_argument("instance", help="instance type, e.g. p4d.24xlarge or ml.p4d.24xlarge")
    plan.add_argument(
        "--model",
        action="extend",
        nargs="+",
        required=True,
        metavar="NAME=MEMORY[xCOPIES]",
        help=f"a SageMaker model, its GPU memory per copy and copies: {MODEL_FORM}",
    )
    plan.add_argument(
        "--layout",
        nargs="+",
        metavar="PROFILE",
        help=f"per-GPU MIG layout: {PROFILES_FORM} (default: the planner picks)",
    )
    plan.add_argument(
        "--whole-gpus", action="store_true", help="no partitions: each copy takes whole GPUs"
    )
    plan.add_argument("--plan-arn", metavar="ARN", help="the training plan's ARN")
    plan.add_argument("--count", type=int, default=1, help="instances in the endpoint (1)")
    plan.add_argument("--name", default=DEFAULT_NAME, help=f"endpoint name ({DEFAULT_NAME})")
    plan.add_argument("--role-arn", metavar="ARN", help="the endpoint's execution role")
    plan.add_argument("--region", default="us-east-1", help="region for prices (us-east-1)")
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(run=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    if args.count < 1:
        return fail("--count must be at least 1")
    if args.layout and args.whole_gpus:
        return fail("--layout and --whole-gpus exclude each other: partitions or whole GPUs")
    if args.plan_arn and not _plan_arn_pattern().fullmatch(args.plan_arn):
        return fail(
            f'--plan-arn "{args.plan_arn}" is not a SageMaker ARN '
            "(arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME)"
        )
    catalog = default_catalog()
    try:
        ask = DeploymentAsk(
            endpoint_name=args.name,
            instance=catalog.instance(args.instance),
            instance_count=args.count,
            models=tuple(parse_models(args.model)),
            layout=tuple(args.layout) if args.layout else None,
            whole_gpus=args.whole_gpus,
            plan=ReservedPlan(args.plan_arn) if args.plan_arn else None,
            execution_role_arn=args.role_arn,
            region=args.region,
        )
        plan = with_api_model_checked(plan_deployment(ask, catalog))
    except (UnknownInstanceType, ModelError, UnknownProfile) as exc:
        return fail(str(exc))
    if args.json:
        print_json(plan.to_json())
    else:
        _print(console(), plan)
    return 0 if plan.valid else 1


def with_api_model_checked(plan: DeploymentPlan) -> DeploymentPlan:
    """`plan`, refused as well for any request the SageMaker API model would reject."""
    if not plan.valid:
        return plan
    from bot.adapters.aws.request_check import request_problems  # botocore: only when used

    problems = [
        p
        for operation, params in plan.requests()
        for p in request_problems("sagemaker", operation, params)
    ]
    return plan.refused(*(Refusal(Rule.API_MODEL, p) for p in problems))


def _plan_arn_pattern() -> re.Pattern[str]:
    from bot.adapters.aws.request_check import service_model

    shape = service_model("sagemaker").shape_for("MlReservationArn")
    return re.compile(shape.metadata["pattern"])


def _print(out: Console, plan: DeploymentPlan) -> None:
    ask = plan.ask
    verdict = "can be deployed" if plan.valid else "refused"
    _say(
        out,
        f"{ask.instance_count} x {ask.instance.sagemaker_name} ({ask.instance.gpus}x "
        f"{ask.instance.gpu_model}) for endpoint {ask.endpoint_name}: {verdict}",
    )
    for error in plan.errors:
        _say(out, f"  - {error.message} [{error.rule.value}]")
    for note in plan.notes:
        _say(out, f"note: {note}")
    if plan.components:
        table = Table(box=None, pad_edge=False)
        for col in ("model", "needs", "copies", "on", "component"):
            table.add_column(col)
        for c in plan.components:
            on = c.partition_type or ask.instance.devices(c.devices)
            table.add_row(c.model, f"{c.memory_gb:g} GB", str(c.copies), on, c.name)
        out.print(table)
    if not plan.valid:
        return  # no shares of an endpoint that cannot be made (they would not add up)
    if plan.costs:
        _print_costs(out, plan)
    _say(out, "requests, in order:")
    for operation, params in plan.requests():
        _say(out, f"{operation} {json.dumps(params)}")


def _print_costs(out: Console, plan: DeploymentPlan) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("model", "share", "On-Demand USD/h", "plan USD/h"):
        table.add_column(col)
    for cost in plan.costs:

        def usd(value: float | None) -> str:
            return "-" if value is None else f"{value:.4f}"

        table.add_row(
            cost.model,
            f"{cost.share:.1%}",
            usd(cost.on_demand_usd_per_hour),
            usd(cost.reserved_usd_per_hour),
        )
    _say(out, "cost per model, by the accelerators its copies hold:")
    out.print(table)
    price = plan.price
    _say(out, f"price: {price.describe()}" if price else "price: none in the catalog")


def _say(out: Console, text: str) -> None:
    # Messages echo user input (model names): print them as text, never as rich markup.
    out.print(text, markup=False, soft_wrap=True)
