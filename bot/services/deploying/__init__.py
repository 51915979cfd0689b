"""Endpoints on a request's training plan: checked, recorded, then built by one job.

`start` checks everything it can before any change in AWS (the plan as AWS reports it,
the names, the MIG layout, the copies) and records the deployment with its exact requests
and its deploy job in one step. The deploy job never trusts its own memory of what it
sent: each run looks at what AWS holds under the deployment's names, checks each thing is
its own by tag, takes the next step (config, endpoint, components) and gives the job back
while AWS works (RetryLater, no sleeping). A job that dies half way finds what it made and
goes on; SageMaker names are unique, so a second endpoint cannot be made.

Progress is one message, posted once (OnceOnly) and updated in place at each step.
"""

from bot.services.deploying.jobs import KINDS, deploy_job, plan_end_jobs, undeploy_job
from bot.services.deploying.orders import DeployOrder, DeployRefused
from bot.services.deploying.service import DeployService

__all__ = [
    "KINDS",
    "DeployOrder",
    "DeployRefused",
    "DeployService",
    "deploy_job",
    "plan_end_jobs",
    "undeploy_job",
]
