"""Reading the deploy form, and each refusal put on the field it is about."""

from __future__ import annotations

import re
from collections.abc import Mapping

from bot.blocks.ids import FormBlock
from bot.domain.deployment import Refusal, Rule
from bot.domain.mig.planner import MODEL_FORM, ModelError, ModelNeed, parse_model

RULE_FIELDS = {
    Rule.PLAN_NOT_ACTIVE: FormBlock.DEPLOY_PLAN,
    Rule.PLAN_NOT_FOR_ENDPOINTS: FormBlock.DEPLOY_PLAN,
    Rule.INSTANCE_TYPE_DIFFERS: FormBlock.DEPLOY_PLAN,
    Rule.MORE_INSTANCES_THAN_PLAN: FormBlock.DEPLOY_COUNT,
    Rule.LAYOUT_REJECTED: FormBlock.DEPLOY_LAYOUT,
    Rule.NO_PARTITION_HOLDS_MODEL: FormBlock.DEPLOY_LAYOUT,
    Rule.MORE_COPIES_THAN_PARTITIONS: FormBlock.DEPLOY_MODELS,
    Rule.WHOLE_GPU_ON_PARTITIONED: FormBlock.DEPLOY_MODELS,
    Rule.MORE_COPIES_THAN_GPUS: FormBlock.DEPLOY_MODELS,
    Rule.ENDPOINT_NAME_TAKEN: FormBlock.DEPLOY_NAME,
    Rule.API_MODEL: FormBlock.DEPLOY_MODELS,
    Rule.NO_EXECUTION_ROLE: FormBlock.DEPLOY_MODELS,  # the role is the first model's
}
WHOLE = "whole"
_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_COPIES = re.compile(r"\s*x\s*(\d+)\s*$", re.IGNORECASE)
MAX_ERROR = 1500


class FormInput:
    """The form's fields as typed, read into what a DeployOrder needs, or errors by field."""

    def __init__(self, values: Mapping[str, str | None]) -> None:
        self.errors: dict[str, str] = {}
        self.request_id = (values.get(FormBlock.DEPLOY_PLAN.value) or "").strip()
        if not self.request_id:
            self.errors[FormBlock.DEPLOY_PLAN.value] = "Pick the training plan to deploy onto."
        self.models = self._models(values.get(FormBlock.DEPLOY_MODELS.value) or "")
        self.count = self._count(values.get(FormBlock.DEPLOY_COUNT.value) or "1")
        layout = (values.get(FormBlock.DEPLOY_LAYOUT.value) or "").strip()
        self.whole_gpus = layout.lower() == WHOLE
        words = re.split(r"[\s,+]+", layout)
        self.layout = tuple(w for w in words if w) if layout and not self.whole_gpus else None
        self.name = (values.get(FormBlock.DEPLOY_NAME.value) or "").strip() or None
        if self.name is not None and not _NAME.fullmatch(self.name):
            self.errors[FormBlock.DEPLOY_NAME.value] = (
                "Letters, digits and hyphens, at most 63, starting and ending with a letter "
                "or digit."
            )

    def _models(self, text: str) -> tuple[ModelNeed, ...]:
        """Every line read; what is wrong with each is said at once, not the first only."""
        models: list[ModelNeed] = []
        wrong: list[str] = []
        for line in (p.strip() for p in re.split(r"[\n;]+", text)):
            if not line:
                continue
            line = _COPIES.sub(lambda m: f"x{m.group(1)}", line).replace(" ", "")
            try:
                model = parse_model(line)
            except ModelError as exc:
                wrong.append(str(exc))
                continue
            if any(m.name == model.name for m in models):
                wrong.append(f"{model.name} is named twice.")
                continue
            models.append(model)
        if not models and not wrong:
            wrong.append(f"Name at least one model: {MODEL_FORM}.")
        if wrong:
            self.errors[FormBlock.DEPLOY_MODELS.value] = " ".join(wrong)[:MAX_ERROR]
        return tuple(models)

    def _count(self, text: str) -> int:
        if not text.strip().isdigit() or int(text) < 1:
            self.errors[FormBlock.DEPLOY_COUNT.value] = "A whole number of instances, 1 or more."
            return 1
        return int(text)


def field_errors(
    refusals: tuple[Refusal, ...], errors: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Each refusal on its field, in words (the rule's id is for logs and the CLI's
    JSON); several on one field, and `errors` already found, are joined."""
    merged = dict(errors or {})
    for r in refusals:
        add(merged, RULE_FIELDS.get(r.rule, FormBlock.DEPLOY_MODELS).value, r.message)
    return {k: v[:MAX_ERROR] for k, v in merged.items()}


def add(errors: dict[str, str], field: str, text: str) -> None:
    """`text` on `field`, after what is already said there."""
    errors[field] = f"{errors[field]} {text}" if field in errors else text
