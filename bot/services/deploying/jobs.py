"""The deployment jobs: what each carries, its kind, and when it is due."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from bot.domain.deployment.record import (
    DeployState,
)
from bot.domain.lifecycle import State
from bot.services.jobs import JobKind
from bot.services.ports import Job

POLL = timedelta(seconds=30)  # how often AWS is asked while it creates or deletes
ACTIVE_STATES = frozenset({State.ACTIVE, State.EXPIRING})
CREATING = frozenset({"Creating", "Updating", "SystemUpdating", "Pending"})
# AWS answers that mean "not now" rather than "no" (throttling, its own faults, no answer).
RETRYABLE = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalServerError",
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
    }
)


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DeploymentJob(_Payload):
    deployment: str


class PlanEndJob(_Payload):
    """Tell the requester and the approvers that a deployment's plan ends (`ended`
    False: soon, at `end`) or has ended under it."""

    deployment: str
    end: datetime
    ended: bool


class RequestCleanedJob(_Payload):
    """A request was cleaned up (nothing tagged for it is left in AWS): its deployments
    that still say they hold an endpoint are looked at again."""

    request: str


DEPLOY = JobKind("deploy", DeploymentJob)
UNDEPLOY = JobKind("undeploy", DeploymentJob)
PLAN_END = JobKind("deploy-plan-end", PlanEndJob)
GONE = JobKind("deploy-gone", RequestCleanedJob)
KINDS = (DEPLOY, UNDEPLOY, PLAN_END, GONE)
# States that say an endpoint stands, whose deploy job is done: when AWS has nothing
# tagged for the deployment any more (the request's cleanup removed it, or someone did),
# the record says so. Deploying and deleting ones are their jobs' to settle.
STANDING = frozenset({DeployState.IN_SERVICE, DeployState.FAILED})
MODELS_KEPT = timedelta(hours=1)  # ListModels as the deploy form was opened
DEFAULT_WARNING = timedelta(hours=24)  # before the plan ends, when no lead is configured
# Deleting in this order never trips over a dependency (components live on the endpoint,
# the endpoint uses the config).
DELETE_ORDER = ("inference-component", "endpoint", "endpoint-config")


def deploy_job(deployment_id: str, due: datetime) -> Job:
    return DEPLOY.job(deployment_id, due, DeploymentJob(deployment=deployment_id))


def plan_end_jobs(deployment_id: str, end: datetime, lead: timedelta, now: datetime) -> list[Job]:
    """The warning before the plan ends (if still ahead) and the report when it has."""
    jobs = [
        PLAN_END.job(
            f"{deployment_id}:ended",
            end,
            PlanEndJob(deployment=deployment_id, end=end, ended=True),
        )
    ]
    if end - lead > now:
        jobs.append(
            PLAN_END.job(
                f"{deployment_id}:before",
                end - lead,
                PlanEndJob(deployment=deployment_id, end=end, ended=False),
            )
        )
    return jobs


def undeploy_job(deployment_id: str, due: datetime) -> Job:
    return UNDEPLOY.job(deployment_id, due, DeploymentJob(deployment=deployment_id))
