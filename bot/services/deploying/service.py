"""The deployment service: its parts put together and its jobs registered."""

from __future__ import annotations

from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord
from bot.services.deploying.building import DeployBuilding
from bot.services.deploying.jobs import DEPLOY, GONE, PLAN_END, UNDEPLOY, RequestCleanedJob
from bot.services.deploying.orders import DeployOrders
from bot.services.deploying.plan_end import PlanEndWarnings
from bot.services.deploying.teardown import DeployTeardown
from bot.services.jobs import JobRegistry
from bot.services.ports import Job


class DeployService(DeployOrders, DeployBuilding, DeployTeardown, PlanEndWarnings):
    def register(self, jobs: JobRegistry) -> None:
        jobs.register(DEPLOY, lambda job: self.run_deploy(job.deployment))
        jobs.register(UNDEPLOY, lambda job: self.run_undeploy(job.deployment))
        jobs.register(PLAN_END, self.run_plan_end)
        jobs.register(GONE, lambda job: self.settle_request(job.request))

    def jobs_for_change(
        self, old: CapacityRecord | None, new: CapacityRecord
    ) -> tuple[list[Job], list[str]]:
        """Told of every request saved (the store's follower): a request cleaned up means
        its deployments' endpoints are gone too (they carry its tag); a job records it."""
        cleaned = new.state is State.CLEANED_UP and (old is None or old.state is not new.state)
        if not cleaned:
            return [], []
        payload = RequestCleanedJob(request=new.id)
        return [GONE.job(new.id, self.clock.now(), payload)], []
