"""Deployments onto reserved capacity: SageMaker endpoints on training plans, optionally
split into MIG partitions with one inference component per model. Pure: no boto3, Slack
or Redis."""

from bot.domain.deployment.plan import (
    ComponentPlan,
    DeploymentAsk,
    DeploymentPlan,
    ModelCost,
    ReservedPlan,
    entity_name,
    plan_deployment,
    plan_refusals,
)
from bot.domain.deployment.rules import Refusal, Rule

__all__ = [
    "ComponentPlan",
    "DeploymentAsk",
    "DeploymentPlan",
    "ModelCost",
    "Refusal",
    "ReservedPlan",
    "Rule",
    "entity_name",
    "plan_deployment",
    "plan_refusals",
]
