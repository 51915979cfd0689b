"""MIG partitions for SageMaker inference components: profile tables, validator, planner.

Pure: no boto3, Slack or Redis. `gpu-bot mig` and `/gpu mig` call `check_layout` and
`plan_layout`.
"""

from bot.domain.mig.layout import (
    EndpointKind,
    LayoutCheck,
    UnknownProfile,
    check_layout,
    read_layout,
)
from bot.domain.mig.planner import (
    ModelError,
    ModelNeed,
    Plan,
    parse_model,
    parse_models,
    plan_layout,
)
from bot.domain.mig.profiles import FAMILIES, INFERENCE_AMI_DRIVERS, RECOMMENDED_AMI

__all__ = [
    "FAMILIES",
    "INFERENCE_AMI_DRIVERS",
    "RECOMMENDED_AMI",
    "EndpointKind",
    "LayoutCheck",
    "ModelError",
    "ModelNeed",
    "Plan",
    "UnknownProfile",
    "check_layout",
    "parse_model",
    "parse_models",
    "plan_layout",
    "read_layout",
]
