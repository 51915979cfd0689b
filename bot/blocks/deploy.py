"""Deployments as people see them: the one progress message, the status answer, refusals.
Pure: from a `Deployment` to text and blocks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.blocks.elements import actions, button, confirmed, context, section
from bot.blocks.ids import ActionId
from bot.blocks.reminders import Message
from bot.blocks.text import esc, user, when
from bot.blocks.values import DeploymentRef, RequestRef
from bot.domain.catalog import UnknownInstanceType, default_catalog
from bot.domain.comparison import OptionKind
from bot.domain.deployment import Refusal
from bot.domain.deployment.record import Deployment, DeployState
from bot.domain.lifecycle import State
from bot.domain.mig.planner import IDLE
from bot.domain.offering_rules import training_plan_target
from bot.domain.records import CapacityRecord

Block = dict[str, Any]
_ICONS = {
    DeployState.QUEUED: ":hourglass_flowing_sand:",
    DeployState.DEPLOYING: ":hourglass_flowing_sand:",
    DeployState.IN_SERVICE: ":white_check_mark:",
    DeployState.FAILED: ":x:",
    DeployState.REFUSED: ":no_entry:",
    DeployState.DELETING: ":wastebasket:",
    DeployState.DELETED: ":broom:",
}


def headline(d: Deployment) -> str:
    return (
        f"{_ICONS[d.state]} Deployment {d.id} of {esc(d.request_id)}: endpoint "
        f"`{esc(d.endpoint_name)}` is {d.state.label}"
    )


def steps(d: Deployment) -> list[str]:
    """One line per resource, in the order they are made."""
    config = (
        "created"
        if d.config_exists
        else "deleted"
        if d.state is DeployState.DELETED
        else "not created yet"
    )
    lines = [f"• Endpoint configuration `{esc(d.config_name)}`: {config}"]
    endpoint = esc(d.endpoint_status) if d.endpoint_status else "not created yet"
    lines.append(f"• Endpoint `{esc(d.endpoint_name)}`: {endpoint}")
    for c in d.components:
        where = f"on {esc(c.partition_type)}" if c.partition_type else f"on {c.devices} GPU(s)"
        status = esc(c.status) if c.status else "not created yet"
        reason = f" ({esc(c.reason)})" if c.reason else ""
        lines.append(
            f"• Component `{esc(c.name)}`: {esc(c.model)}, {c.copies} cop"
            f"{'y' if c.copies == 1 else 'ies'} {where}: {status}{reason}"
        )
    return lines


def cost_lines(d: Deployment) -> list[str]:
    lines = []
    for c in d.costs:
        name = "_idle_" if c.model == IDLE else esc(c.model)
        reserved = (
            f"{_hourly(c.reserved_usd_per_hour)} of the plan's fee"
            if c.reserved_usd_per_hour is not None
            else ""
        )
        on_demand = (
            f"{_hourly(c.on_demand_usd_per_hour)} at On-Demand hosting rates"
            if c.on_demand_usd_per_hour is not None
            else ""
        )
        money = " · ".join(p for p in (reserved, on_demand) if p) or "no price known"
        lines.append(f"• {name}: {c.share:.0%} of the endpoint, {money}")
    return lines


def _whole_devices(instance_type: str) -> str:
    """Without partitions each copy takes whole accelerators: GPUs, or Trainium devices."""
    try:
        accelerator = default_catalog().instance(instance_type).accelerator
    except UnknownInstanceType:
        accelerator = "nvidia"
    return "whole Trainium devices" if accelerator == "trainium" else "whole GPUs"


def _hourly(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}/h"


def progress(d: Deployment) -> Message:
    """The one message that follows a deployment from queued to in service (or failed)."""
    layout = " + ".join(d.layout) + " per GPU" if d.layout else _whole_devices(d.instance_type)
    blocks: list[Block] = [
        section(headline(d)),
        context(
            f"{d.instance_count}x {esc(d.instance_type)} on training plan "
            f"`{esc(d.plan_arn)}` · {esc(layout)} · {esc(d.region)}"
        ),
        section("\n".join(steps(d))),
    ]
    if d.failure:
        blocks.append(section(f"*Why:* {esc(d.failure)}"))
    if d.costs:
        # Gone: what it cost per hour while it stood, not what it costs now (nothing).
        title = (
            "*Cost per model*"
            if d.state is not DeployState.DELETED
            else ("*Cost per model, while it ran* (nothing is billed for it now)")
        )
        blocks.append(section(title + "\n" + "\n".join(cost_lines(d))))
    if d.state in (DeployState.IN_SERVICE, DeployState.FAILED):
        blocks.append(cleanup_button(d))
    return Message(headline(d), blocks)


def cleanup_button(d: Deployment) -> Block:
    clean = button("Clean up", ActionId.DEPLOY_CLEANUP, DeploymentRef(d.id), "danger")
    return actions(
        f"deploy-cleanup:{d.id}",
        confirmed(
            clean,
            "Delete the endpoint?",
            f"Deletes `{esc(d.endpoint_name)}`, its components and its configuration.",
            yes="Delete",
            no="Keep",
        ),
    )


def status_blocks(d: Deployment, now: datetime) -> list[Block]:
    """`/gpu status D3`: the endpoint, its components and the plan's time left."""
    message = progress(d)
    if d.plan_end is not None:
        left = d.plan_end - now
        if left.total_seconds() > 0:
            hours = int(left.total_seconds() // 3600)
            text = f"Training plan ends {when(d.plan_end)}: {hours // 24} d {hours % 24} h left"
        else:
            text = f"Training plan ended {when(d.plan_end)}: the endpoint has no capacity"
        message.blocks.insert(2, context(text))
    return message.blocks


def refusal_text(refusals: Sequence[Refusal]) -> str:
    return "\n".join(f"• {esc(r.message)}" for r in refusals)


def deployable(record: CapacityRecord) -> bool:
    """An active training plan that reserves capacity for endpoints."""
    res = record.reservation
    return (
        record.state in (State.ACTIVE, State.EXPIRING)
        and res is not None
        and res.kind is OptionKind.TRAINING_PLAN
        and training_plan_target(record.request.workload) == "endpoint"
    )


def deploy_button(record: CapacityRecord) -> Block:
    """Opens the deploy form with this plan chosen."""
    return actions(
        f"deploy-open:{record.id}",
        button("Deploy an endpoint", ActionId.DEPLOY_OPEN, RequestRef(record.id), "primary"),
    )


def deployments_block(ds: Sequence[Deployment]) -> Block:
    """A request's deployments, one line each, under its status."""
    lines = [
        f"{_ICONS[d.state]} {d.id}: endpoint `{esc(d.endpoint_name)}` {d.state.label} "
        f"(`/gpu status {d.id}`)"
        for d in ds
    ]
    return context("*Deployments*\n" + "\n".join(lines))


def endpoint_lines(ds: Sequence[Deployment]) -> list[str]:
    """One line per deployment for App Home: what it is, where it stands, what to type."""
    lines = []
    for d in ds:
        hourly = f" · {_hourly(d.reserved_usd_per_hour)}" if d.reserved_usd_per_hour else ""
        lines.append(
            f"{_ICONS[d.state]} *{d.id}* endpoint `{esc(d.endpoint_name)}` on "
            f"{esc(d.request_id)}: {d.state.label}{hourly} · `/gpu status {d.id}` · "
            f"`/gpu cleanup {d.id}`"
        )
    return lines


def plan_end_message(d: Deployment, end: datetime, *, ended: bool, now: datetime) -> Message:
    """To the requester and the approval channel: the plan ends (or ended) under a live
    endpoint, which then has no capacity and stops serving."""
    who = user(d.requester)
    where = f"endpoint `{esc(d.endpoint_name)}` ({d.id}, request {esc(d.request_id)})"
    if ended:
        head = (
            f":rotating_light: Training plan `{esc(d.plan_arn)}` ended {when(end)} under "
            f"{where} of {who}: the endpoint has no capacity and no longer serves."
        )
        ask = "Clean it up, or reserve new capacity and deploy again."
    else:
        hours = max(0, int((end - now).total_seconds() // 3600))
        head = (
            f":warning: Training plan `{esc(d.plan_arn)}` under {where} of {who} ends "
            f"{when(end)}, in about {hours} h: the endpoint stops serving then."
        )
        ask = "Extend the plan (the Extend button on its reminder) or clean the endpoint up."
    text = f"{head} {ask}"
    return Message(text, [section(text), cleanup_button(d)])
