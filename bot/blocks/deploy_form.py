"""The deploy form: which plan, which models (with memory and copies), how many instances,
which MIG layout, which endpoint name. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.blocks.elements import context, input_block, modal, plain, select_option
from bot.blocks.ids import CallbackId, FormBlock
from bot.blocks.text import esc, when
from bot.domain.records import CapacityRecord

View = dict[str, Any]
Block = dict[str, Any]
MODELS_HINT = (
    "NAME=MEMORY[xCOPIES], the GPU memory one copy needs, one per line or separated by "
    "semicolons, e.g. llama-3-8b=18gb x2; bge-embed=4gbx3"
)
LAYOUT_HINT = (
    "MIG profiles for each GPU, e.g. 3g.20gb 2g.10gb 1g.10gb. Leave empty and the planner "
    "picks the one that wastes least; write `whole` for whole GPUs."
)


@dataclass(frozen=True)
class DeployFormFill:
    """What the form shows already filled in (from a Deploy button, or a re-check)."""

    request_id: str | None = None
    models: str = ""
    count: int = 1
    layout: str = ""
    name: str = ""
    note: str | None = None  # the check's verdict, the planner's suggestion


def plan_label(record: CapacityRecord) -> str:
    res = record.reservation
    assert res is not None
    return f"{record.id}: {res.instances}x {res.instance_type}, until {when(res.end)}"


def deploy_form(
    plans: Sequence[CapacityRecord],
    models: Sequence[str],
    metadata: dict[str, str],
    fill: DeployFormFill,
) -> View:
    options = [select_option(plan_label(r), r.id) for r in plans[:100]]
    plan: Block = {"type": "static_select", "options": options, "placeholder": plain("Plan")}
    chosen = next((o for o in options if o["value"] == fill.request_id), None)
    if chosen is not None:
        plan["initial_option"] = chosen
    model_input: Block = {
        "type": "plain_text_input",
        "multiline": True,
        "max_length": 2000,
        "placeholder": plain("llama-3-8b=18gb x2"),
    }
    if fill.models:
        model_input["initial_value"] = fill.models
    count: Block = {
        "type": "number_input",
        "is_decimal_allowed": False,
        "min_value": "1",
        "max_value": "64",
        "initial_value": str(fill.count),
    }
    layout: Block = {"type": "plain_text_input", "placeholder": plain("planner's choice")}
    if fill.layout:
        layout["initial_value"] = fill.layout
    name: Block = {"type": "plain_text_input", "max_length": 63}
    if fill.name:
        name["initial_value"] = fill.name
    listed = ", ".join(f"`{esc(m)}`" for m in models[:40]) or "_none found_"
    blocks: list[Block] = []
    if fill.note:
        blocks.append(context(fill.note))
    blocks += [
        input_block(
            FormBlock.DEPLOY_PLAN, "Training plan", plan, hint="Your active plans for endpoints"
        ),
        input_block(FormBlock.DEPLOY_MODELS, "Models", model_input, hint=MODELS_HINT),
        context(f"SageMaker models in the plan's account: {listed}"),
        input_block(FormBlock.DEPLOY_COUNT, "Instances", count),
        input_block(FormBlock.DEPLOY_LAYOUT, "MIG layout", layout, optional=True, hint=LAYOUT_HINT),
        input_block(
            FormBlock.DEPLOY_NAME,
            "Endpoint name",
            name,
            optional=True,
            hint="Leave empty for a name made from the request",
        ),
    ]
    return modal(CallbackId.DEPLOY, "Deploy an endpoint", "Deploy", blocks, metadata)
