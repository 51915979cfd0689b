"""What is checked of a deployment before any AWS call: the training plan it runs on,
the execution role, names already taken; and the notes on what could not be checked."""

from __future__ import annotations

from bot.domain.catalog import InstanceType
from bot.domain.deployment.ask import (
    DeploymentAsk,
    ReservedPlan,
)
from bot.domain.deployment.rules import Refusal, Rule

ENDPOINT_TARGET = "endpoint"  # a training plan's TargetResources value for endpoints
ACTIVE = "Active"  # DescribeTrainingPlan's Status of a plan whose window is open


def plan_errors(ask: DeploymentAsk) -> list[Refusal]:
    errors = []
    if not ask.execution_role_arn and not ask.role_looked_up_later:
        errors.append(
            Refusal(
                Rule.NO_EXECUTION_ROLE,
                "no execution role: an endpoint built from inference components needs "
                "ExecutionRoleArn in its configuration (the role SageMaker uses to run the "
                "models)",
            )
        )
    if ask.plan is not None:
        errors += plan_refusals(ask.plan, ask.instance, ask.instance_count)
    return errors


def plan_refusals(plan: ReservedPlan, instance: InstanceType, instance_count: int) -> list[Refusal]:
    """Why an endpoint of `instance_count` x `instance` cannot run on `plan` (as far as
    the plan's known facts tell); checked again just before the first change in AWS."""
    errors = []
    if plan.status is not None and plan.status != ACTIVE:
        errors.append(
            Refusal(
                Rule.PLAN_NOT_ACTIVE,
                f"training plan {plan.arn} is {plan.status}; an endpoint can use it only "
                f"while it is {ACTIVE}",
            )
        )
    if plan.target_resources is not None and ENDPOINT_TARGET not in plan.target_resources:
        errors.append(
            Refusal(
                Rule.PLAN_NOT_FOR_ENDPOINTS,
                f"training plan {plan.arn} reserves capacity for "
                f"{', '.join(plan.target_resources) or 'nothing'}, not for endpoints "
                f"(TargetResources must include {ENDPOINT_TARGET})",
            )
        )
    if plan.instance_type is not None:
        reserved = plan.instance_type.lower().removeprefix("ml.")
        if reserved != instance.instance_type:
            errors.append(
                Refusal(
                    Rule.INSTANCE_TYPE_DIFFERS,
                    f"the endpoint asks for {instance.sagemaker_name} but training plan "
                    f"{plan.arn} reserves ml.{reserved}: the instance type must be the plan's",
                )
            )
    if plan.instances is not None and instance_count > plan.instances:
        errors.append(
            Refusal(
                Rule.MORE_INSTANCES_THAN_PLAN,
                f"{instance_count} instances asked; training plan {plan.arn} holds "
                f"{plan.instances}",
            )
        )
    return errors


def plan_notes(ask: DeploymentAsk) -> list[str]:
    role = (
        ["execution role: the first model's, looked up when the deployment starts"]
        if ask.role_looked_up_later and not ask.execution_role_arn
        else []
    )
    return role + _reservation_notes(ask.plan)


def _reservation_notes(plan: ReservedPlan | None) -> list[str]:
    if plan is None:
        return [
            "no training plan: the endpoint would run on On-Demand capacity "
            "(no CapacityReservationConfig)"
        ]
    unknown = [
        what
        for what, value in (
            ("status", plan.status),
            ("target resources", plan.target_resources),
            ("instance type", plan.instance_type),
            ("instance count", plan.instances),
        )
        if value is None
    ]
    if not unknown:
        return []
    return [
        f"not checked against the plan (not looked up): {', '.join(unknown)}; "
        "the deploy checks them with DescribeTrainingPlan before any change"
    ]


def name_errors(
    ask: DeploymentAsk, taken_endpoints: frozenset[str], taken_configs: frozenset[str]
) -> list[Refusal]:
    errors = []
    if ask.endpoint_name in taken_endpoints:
        errors.append(
            Refusal(
                Rule.ENDPOINT_NAME_TAKEN,
                f"an endpoint named {ask.endpoint_name} already exists in {ask.region}",
            )
        )
    if ask.endpoint_name in taken_configs:
        errors.append(
            Refusal(
                Rule.ENDPOINT_NAME_TAKEN,
                f"an endpoint configuration named {ask.endpoint_name} already exists "
                f"in {ask.region}",
            )
        )
    return errors
