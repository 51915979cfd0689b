"""The deployment service: its parts put together and its jobs registered."""

from __future__ import annotations

from bot.services.deploying.building import DeployBuilding
from bot.services.deploying.jobs import DEPLOY, GONE, PLAN_END, UNDEPLOY
from bot.services.deploying.orders import DeployOrders
from bot.services.deploying.plan_end import PlanEndWarnings
from bot.services.deploying.teardown import DeployTeardown
from bot.services.jobs import JobRegistry


class DeployService(DeployOrders, DeployBuilding, DeployTeardown, PlanEndWarnings):
    def register(self, jobs: JobRegistry) -> None:
        jobs.register(DEPLOY, lambda job: self.run_deploy(job.deployment))
        jobs.register(UNDEPLOY, lambda job: self.run_undeploy(job.deployment))
        jobs.register(PLAN_END, self.run_plan_end)
        jobs.register(GONE, lambda job: self.settle_request(job.request))
