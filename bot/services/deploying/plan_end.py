"""The plan ending under an endpoint: a warning before, a report when it has."""

from __future__ import annotations

from bot.blocks.deploy import plan_end_message
from bot.services.changes import BOT
from bot.services.deploying.base import DeploymentRecords
from bot.services.deploying.jobs import POLL, PlanEndJob
from bot.services.jobs import RetryLater
from bot.services.ports.hosting import HostingError


class PlanEndWarnings(DeploymentRecords):
    def run_plan_end(self, job: PlanEndJob) -> None:
        """Warn before, and report when, the plan ends under a deployment that may still
        hold an endpoint. An extended plan moves the message to its new end."""
        d = self.deployments.deployment(job.deployment)
        if d is None or not d.state.live:
            return
        now = self.clock.now()
        try:
            plan = self.hosting.training_plan(d.account, d.region, d.plan_arn)
        except HostingError as error:
            raise RetryLater(now + POLL, f"AWS: {error}") from error
        end = plan.end if plan is not None and plan.end is not None else job.end
        due = end if job.ended else end - self.warn_before
        if end > job.end and due > now:
            raise RetryLater(due, f"{d.plan_arn} was extended to {end.isoformat()}")
        if job.ended and now < end:
            raise RetryLater(end, "the plan has not ended yet")
        moment = "ended" if job.ended else "before"
        message = plan_end_message(d, end, ended=job.ended, now=now)
        stamp = int(end.timestamp())
        for channel in (d.requester, self.approval_channel):
            key = f"deploy-plan-end:{d.id}:{moment}:{stamp}:{channel}"
            self.delivery.send(key, channel, message.text, message.blocks)
        self._audit(
            d.request_id,
            f"deploy-plan-{moment}",
            BOT,
            f"{d.id}: plan {'ended' if job.ended else 'ends'} {end.isoformat()} under "
            f"{d.endpoint_name}",
        )
