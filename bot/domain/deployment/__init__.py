"""Deployments onto reserved capacity: SageMaker endpoints on training plans, optionally
split into MIG partitions with one inference component per model. Pure: no boto3, Slack
or Redis.

ask.py (what is asked), checks.py (plan, role and names, before any AWS call), names.py,
partitions.py and whole_gpus.py (where each model's copies go, and their cost), plan.py
(`plan_deployment` and the requests it sends), record.py (a deployment's record)."""

from bot.domain.deployment.ask import ComponentPlan, DeploymentAsk, ModelCost, ReservedPlan
from bot.domain.deployment.checks import plan_refusals
from bot.domain.deployment.names import entity_name
from bot.domain.deployment.plan import DeploymentPlan, plan_deployment
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
