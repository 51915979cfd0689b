"""A MIG layout check as Block Kit, for `/gpu mig check`."""

from __future__ import annotations

import json
from typing import Any

from bot.blocks.text import esc
from bot.domain.mig import LayoutCheck


def mig_check_blocks(check: LayoutCheck) -> list[dict[str, Any]]:
    title = f"{check.instance.instance_type} ({check.instance.gpus}x {check.instance.gpu_model})"
    layout = " + ".join(check.profiles) or "(no profiles)"
    if not check.valid:
        problems = "\n".join(f"• {esc(e)}" for e in check.errors)
        text = f":x: *{esc(layout)}* does not work on {title}:\n{problems}"
        return [{"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}}]
    counts = ", ".join(f"{n} x {name}" for name, n in check.partitions_by_profile().items())
    lines = [
        f":white_check_mark: *{esc(layout)}* works on {title}",
        f"• {check.partitions_per_gpu} partitions per GPU, {check.partitions_total} per "
        f"endpoint ({counts})",
        f"• unused per GPU: {check.unused_compute_slices} compute and "
        f"{check.unused_memory_slices} memory slices",
        "```" + json.dumps(check.production_variant_fields()) + "```",
    ]
    if check.family and check.family.note:
        lines.append(f"_{esc(check.family.note)}_")
    return [{"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:2900]}}]
