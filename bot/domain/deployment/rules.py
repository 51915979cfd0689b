"""The rules a deployment onto reserved capacity is checked against, each with a name.

A refusal names its rule so that a person (or a script reading `--json`) can tell a plan
that is not active yet from a layout that cannot exist, without parsing the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Rule(StrEnum):
    PLAN_NOT_ACTIVE = "plan-not-active"
    PLAN_NOT_FOR_ENDPOINTS = "plan-not-for-endpoints"
    INSTANCE_TYPE_DIFFERS = "instance-type-differs"
    MORE_INSTANCES_THAN_PLAN = "more-instances-than-plan"
    LAYOUT_REJECTED = "layout-rejected"
    MORE_COPIES_THAN_PARTITIONS = "more-copies-than-partitions"
    WHOLE_GPU_ON_PARTITIONED = "whole-gpu-model-on-partitioned-endpoint"
    NO_PARTITION_HOLDS_MODEL = "no-partition-holds-model"
    MORE_COPIES_THAN_GPUS = "more-copies-than-gpus"
    ENDPOINT_NAME_TAKEN = "endpoint-name-taken"
    NO_EXECUTION_ROLE = "no-execution-role"  # required by endpoints of inference components
    API_MODEL = "sagemaker-api-model"  # a parameter the SageMaker API model rejects


@dataclass(frozen=True)
class Refusal:
    rule: Rule
    message: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule.value, "message": self.message}

    def __str__(self) -> str:
        return f"{self.message} [{self.rule.value}]"
