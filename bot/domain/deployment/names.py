"""SageMaker names of what a deployment creates."""

from __future__ import annotations

import hashlib
import re

from bot.domain.deployment.ask import (
    DeploymentAsk,
)

_NAME_MAX = 63  # SageMaker EntityName: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}


def component_names(ask: DeploymentAsk) -> dict[str, str]:
    """model -> inference component name: the endpoint's name and the model's, made a
    valid SageMaker name (letters, digits, hyphens; at most 63)."""
    names = {}
    for model in ask.models:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", model.name).strip("-") or "model"
        names[model.name] = entity_name(f"{ask.endpoint_name}-{slug}")
    return names


def entity_name(text: str) -> str:
    """`text` as a SageMaker name of at most 63 characters; a long one is cut and given a
    short digest of the whole, so two long names stay distinct."""
    if len(text) <= _NAME_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: _NAME_MAX - 9].rstrip('-')}-{digest}"
