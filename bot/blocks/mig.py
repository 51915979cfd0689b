"""A MIG layout check and plan as Block Kit, for `/gpu mig check` and `/gpu mig plan`."""

from __future__ import annotations

import json
from typing import Any

from bot.blocks.elements import section
from bot.blocks.text import esc
from bot.domain.mig import LayoutCheck, Plan
from bot.domain.words import counted


def mig_check_blocks(check: LayoutCheck) -> list[dict[str, Any]]:
    title = f"{check.instance.instance_type} ({check.instance.gpus}x {check.instance.gpu_model})"
    layout = " + ".join(check.profiles) or "(no profiles)"
    if not check.valid:
        problems = "\n".join(f"• {esc(e)}" for e in check.errors)
        text = f":x: *{esc(layout)}* does not work on {title}:\n{problems}"
        return [section(text)]
    counts = ", ".join(f"{n} x {name}" for name, n in check.partitions_by_profile().items())
    lines = [
        f":white_check_mark: *{esc(layout)}* works on {title}",
        f"• {counted(check.partitions_per_gpu, 'partition')} per GPU, {check.partitions_total} per "
        f"endpoint ({counts})",
        f"• unused per GPU: {check.unused_compute_slices} compute and "
        f"{check.unused_memory_slices} memory slices",
        "```" + json.dumps(check.production_variant_fields()) + "```",
    ]
    if check.family and check.family.note:
        lines.append(f"_{esc(check.family.note)}_")
    return [section("\n".join(lines))]


def mig_plan_blocks(plan: Plan) -> list[dict[str, Any]]:
    inst = plan.instance
    title = f"{inst.instance_type} ({inst.gpus}x {inst.gpu_model})"
    check = plan.check
    if check is None:
        lines = [f":x: No MIG layout fits these models on {title}:"]
        lines += [f"• {esc(r)}" for r in plan.reasons]
        if plan.suggestions:
            lines.append("*What would:*")
            lines += [f"• {esc(s)}" for s in plan.suggestions]
        return [section("\n".join(lines))]
    needs = {m.name: m.memory_gb for m in plan.models}
    lines = [f":white_check_mark: *{esc(' + '.join(check.profiles))}* per GPU on {title}"]
    lines += [
        f"• {esc(a.model)} ({needs[a.model]:g} GB): {a.copies} on {a.profile.sagemaker_name}"
        for a in plan.assignments
    ]
    lines.append(
        f"• waste: {plan.waste_gb:g} GB of memory no model can use, "
        f"{plan.waste_compute_slices} compute slices outside any partition"
    )
    shares = ", ".join(
        f"{esc(s.model)} {s.fraction:.1%}"
        + ("" if s.usd_per_hour is None else f" (${s.usd_per_hour:.4f}/h)")
        for s in plan.chargeback
    )
    lines.append(f"• chargeback by compute slices held: {shares}")
    lines.append("```" + json.dumps(check.production_variant_fields()) + "```")
    if check.family and check.family.note:
        lines.append(f"_{esc(check.family.note)}_")
    return [section("\n".join(lines))]
