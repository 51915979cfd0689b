"""What a deployment asks for (the endpoint, the models, the plan it runs on) and the
parts a plan is made of: one inference component per model, the cost of each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.domain.catalog import InstanceType
from bot.domain.mig.planner import ModelNeed, Share

# Host memory each copy reserves (MinMemoryRequiredInMb is required by the API); the GPU
# memory a copy needs is what its partition or its whole GPUs give it.
HOST_MEMORY_MB = 1024


@dataclass(frozen=True)
class ReservedPlan:
    """What is known of the training plan the endpoint runs on. Facts left as None are
    not checked here (`gpu-bot deploy plan --plan-arn` knows only the ARN)."""

    arn: str
    instance_type: str | None = None  # either spelling: p4d.24xlarge or ml.p4d.24xlarge
    instances: int | None = None
    status: str | None = None  # as DescribeTrainingPlan reports it
    target_resources: tuple[str, ...] | None = None
    start: datetime | None = None
    end: datetime | None = None
    fee_usd: float | None = None

    @property
    def reserved_usd_per_instance_hour(self) -> float | None:
        if None in (self.fee_usd, self.start, self.end, self.instances):
            return None
        assert self.fee_usd is not None and self.start and self.end and self.instances
        hours = (self.end - self.start).total_seconds() / 3600
        return None if hours <= 0 else self.fee_usd / hours / self.instances


@dataclass(frozen=True)
class DeploymentAsk:
    endpoint_name: str
    instance: InstanceType
    instance_count: int
    models: tuple[ModelNeed, ...]
    layout: tuple[str, ...] | None = None  # per-GPU MIG profiles; None: the planner picks
    whole_gpus: bool = False  # no partitions: every copy takes whole GPUs
    plan: ReservedPlan | None = None
    execution_role_arn: str | None = None
    # The role is the first model's, looked up when the deployment starts (the deploy
    # form's check runs before that): not missing, only not known yet.
    role_looked_up_later: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    region: str = "us-east-1"


@dataclass(frozen=True)
class ComponentPlan:
    """One inference component: one model, on one partition type or on whole GPUs."""

    name: str
    model: str
    memory_gb: float
    copies: int
    partition_type: str | None  # "mig-4g.20gb", or None for whole GPUs
    devices: int  # accelerators per copy: 1 on a partition

    def requirements(self) -> dict[str, Any]:
        needs: dict[str, Any] = {
            "NumberOfAcceleratorDevicesRequired": self.devices,
            "MinMemoryRequiredInMb": HOST_MEMORY_MB,
        }
        if self.partition_type:
            needs["AcceleratorPartitionType"] = self.partition_type
        return needs


@dataclass(frozen=True)
class ModelCost:
    model: str  # or IDLE
    share: float  # of the endpoint's accelerators (compute slices or whole devices)
    on_demand_usd_per_hour: float | None  # at the SageMaker hosting rate
    reserved_usd_per_hour: float | None  # at the plan's rate (fee / hours / instances)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "share": round(self.share, 6),
            "on_demand_usd_per_hour": self.on_demand_usd_per_hour,
            "reserved_usd_per_hour": self.reserved_usd_per_hour,
        }


def model_cost(ask: DeploymentAsk, share: Share) -> ModelCost:
    """A model's share of the endpoint, at the On-Demand rate and at the plan's."""
    rate = ask.plan.reserved_usd_per_instance_hour if ask.plan else None
    reserved = None if rate is None else round(rate * ask.instance_count * share.fraction, 4)
    return ModelCost(share.model, share.fraction, share.usd_per_hour, reserved)
