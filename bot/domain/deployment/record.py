"""A deployment as the bot keeps it: one endpoint on one request's training plan, the exact
requests that were checked (sent as they are, so a resumed job sends what was approved),
what AWS last said of each resource, and the cost per model.

The deploy job moves it forward from what AWS holds (found by name, checked by tag), so
the record says what the bot last saw, never what it merely asked for.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.domain.deployment.plan import DeploymentPlan
from bot.domain.records import SlackMessage

TAG_DEPLOYMENT = "gpu-bot:deployment-id"


class DeployState(StrEnum):
    QUEUED = "queued"  # recorded; nothing sent to AWS yet
    DEPLOYING = "deploying"  # config, endpoint or components on their way
    IN_SERVICE = "in-service"
    FAILED = "failed"  # AWS's reason in `failure`
    REFUSED = "refused"  # a rule refused it before any change in AWS
    DELETING = "deleting"  # cleanup: components, then endpoint, then config
    DELETED = "deleted"  # verified: nothing tagged for it is left

    @property
    def final(self) -> bool:
        return self in (DeployState.REFUSED, DeployState.DELETED)

    @property
    def live(self) -> bool:
        """May hold resources in AWS."""
        return self in (DeployState.DEPLOYING, DeployState.IN_SERVICE, DeployState.FAILED,
                        DeployState.DELETING)  # fmt: skip

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    DeployState.QUEUED: "queued",
    DeployState.DEPLOYING: "deploying",
    DeployState.IN_SERVICE: "in service",
    DeployState.FAILED: "failed",
    DeployState.REFUSED: "refused",
    DeployState.DELETING: "cleaning up",
    DeployState.DELETED: "cleaned up",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DeployedComponent(_Frozen):
    name: str
    model: str
    memory_gb: float
    copies: int
    partition_type: str | None  # None: whole GPUs
    devices: int
    params: dict[str, Any]  # the CreateInferenceComponent request
    status: str | None = None  # AWS's InferenceComponentStatus, None before it exists
    reason: str | None = None


class CostLine(_Frozen):
    """One model's share of the endpoint (or the idle share), from the planner."""

    model: str
    share: float
    on_demand_usd_per_hour: float | None
    reserved_usd_per_hour: float | None


class Deployment(_Frozen):
    id: str  # D1, D2, ...
    request_id: str
    requester: str  # who asked for the deployment (told of its progress)
    account: str
    region: str
    plan_arn: str
    plan_end: datetime | None = None
    instance_type: str  # ml.p4d.24xlarge
    instance_count: int
    layout: tuple[str, ...] | None = None  # per-GPU MIG profiles; None: whole GPUs
    endpoint_name: str
    config_name: str
    config_params: dict[str, Any]
    endpoint_params: dict[str, Any]
    components: tuple[DeployedComponent, ...]
    costs: tuple[CostLine, ...] = ()
    state: DeployState = DeployState.QUEUED
    config_exists: bool = False
    endpoint_status: str | None = None  # AWS's EndpointStatus, None before it exists
    failure: str | None = None
    message: SlackMessage | None = None  # the one progress message
    created_at: datetime
    updated_at: datetime
    version: int = 0

    @property
    def tags(self) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in self.endpoint_params.get("Tags", [])}

    @property
    def reserved_usd_per_hour(self) -> float | None:
        rates = [c.reserved_usd_per_hour for c in self.costs]
        return None if not rates or None in rates else sum(r or 0.0 for r in rates)

    def component(self, name: str) -> DeployedComponent | None:
        return next((c for c in self.components if c.name == name), None)


def deployment_from_plan(
    plan: DeploymentPlan,
    *,
    deployment_id: str,
    request_id: str,
    requester: str,
    account: str,
    now: datetime,
) -> Deployment:
    """The record of a valid plan, to be created before any AWS call."""
    ask = plan.ask
    assert plan.valid and ask.plan is not None
    return Deployment(
        id=deployment_id,
        request_id=request_id,
        requester=requester,
        account=account,
        region=ask.region,
        plan_arn=ask.plan.arn,
        plan_end=ask.plan.end,
        instance_type=ask.instance.sagemaker_name,
        instance_count=ask.instance_count,
        layout=tuple(plan.layout.profiles) if plan.layout else None,
        endpoint_name=ask.endpoint_name,
        config_name=plan.endpoint_config_name,
        config_params=plan.endpoint_config_params(),
        endpoint_params=plan.endpoint_params(),
        components=tuple(
            DeployedComponent(
                name=c.name,
                model=c.model,
                memory_gb=c.memory_gb,
                copies=c.copies,
                partition_type=c.partition_type,
                devices=c.devices,
                params=plan.component_params(c),
            )
            for c in plan.components
        ),
        costs=tuple(
            CostLine(
                model=c.model,
                share=round(c.share, 6),
                on_demand_usd_per_hour=c.on_demand_usd_per_hour,
                reserved_usd_per_hour=c.reserved_usd_per_hour,
            )
            for c in plan.costs
        ),
        created_at=now,
        updated_at=now,
    )
