"""The deploy job: one step at a time from what AWS holds now (config, endpoint,
components), giving the job back while AWS works."""

from __future__ import annotations

from collections.abc import Sequence

from bot.domain.deployment import (
    Refusal,
    Rule,
    plan_refusals,
)
from bot.domain.deployment.record import (
    Deployment,
    DeployState,
)
from bot.services.changes import BOT
from bot.services.deploying.base import DeploymentRecords
from bot.services.deploying.jobs import POLL, RETRYABLE
from bot.services.jobs import RetryLater
from bot.services.ports.hosting import HostingError


class DeployBuilding(DeploymentRecords):
    def run_deploy(self, deployment_id: str) -> Deployment | None:
        d = self.deployments.deployment(deployment_id)
        if d is None or d.state not in (DeployState.QUEUED, DeployState.DEPLOYING):
            return d
        d = self._ensure_message(d)
        try:
            d = self._step(d)
        except HostingError as error:
            if error.code in RETRYABLE:
                raise RetryLater(self.clock.now() + POLL, f"AWS: {error}") from error
            # AWS refused a request outright: asking again would be refused again.
            current = self.deployments.deployment(d.id) or d
            d = self._change(current, state=DeployState.FAILED, failure=f"AWS said {error}")
        self._show(d)
        if d.state is DeployState.DEPLOYING:
            raise RetryLater(self.clock.now() + POLL, f"{d.id}: waiting for AWS")
        return d

    def _step(self, d: Deployment) -> Deployment:
        if d.state is DeployState.QUEUED:
            refusals = self._recheck(d)
            if refusals:
                return self._change(d, state=DeployState.REFUSED, failure=_joined(refusals))
        config = self.hosting.config(d.account, d.region, d.config_name)
        if config is not None and not self._ours(d, config):
            return self._taken(d, "endpoint configuration", d.config_name)
        if config is None:
            self.hosting.create(d.account, d.region, "CreateEndpointConfig", d.config_params)
        d = self._change(d, state=DeployState.DEPLOYING, config_exists=True)
        endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
        if endpoint is not None and not self._ours(d, endpoint):
            return self._taken(d, "endpoint", d.endpoint_name)
        if endpoint is None:
            self.hosting.create(d.account, d.region, "CreateEndpoint", d.endpoint_params)
            return self._change(d, endpoint_status="Creating")
        if endpoint.status != "InService":
            failed = endpoint.status in ("Failed", "OutOfService")
            return self._change(
                d,
                endpoint_status=endpoint.status,
                state=DeployState.FAILED if failed else d.state,
                failure=(endpoint.reason or f"the endpoint is {endpoint.status}")
                if failed
                else None,
            )
        d = self._change(d, endpoint_status="InService")
        return self._components(d)

    def _components(self, d: Deployment) -> Deployment:
        found = {c.name: c for c in self.hosting.components(d.account, d.region, d.endpoint_name)}
        components = []
        for c in d.components:
            have = found.get(c.name)
            if have is not None and not self._ours(d, have):
                return self._taken(d, "inference component", c.name)
            if have is None:
                self.hosting.create(d.account, d.region, "CreateInferenceComponent", c.params)
                components.append(c.model_copy(update={"status": "Creating"}))
            else:
                components.append(
                    c.model_copy(update={"status": have.status, "reason": have.reason})
                )
        statuses = {c.status for c in components}
        failed = [c for c in components if c.status == "Failed"]
        if failed:
            why = "; ".join(f"{c.name}: {c.reason or 'no reason given'}" for c in failed)
            return self._change(
                d, components=tuple(components), state=DeployState.FAILED, failure=why
            )
        if statuses == {"InService"}:
            done = self._change(d, components=tuple(components), state=DeployState.IN_SERVICE)
            self._audit(d.request_id, "deployed", BOT, f"{d.id}: {d.endpoint_name} in service")
            return done
        return self._change(d, components=tuple(components))

    def _recheck(self, d: Deployment) -> list[Refusal]:
        """The plan and the name as AWS has them now, just before the first change."""
        plan = self.hosting.training_plan(d.account, d.region, d.plan_arn)
        if plan is None:
            return [Refusal(Rule.PLAN_NOT_ACTIVE, f"AWS has no training plan {d.plan_arn}")]
        instance = self.catalog.instance(d.instance_type)
        refusals = plan_refusals(plan, instance, d.instance_count)
        endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
        if endpoint is not None and not self._ours(d, endpoint):
            refusals.append(_name_taken(d.endpoint_name))
        return refusals

    def _taken(self, d: Deployment, what: str, name: str) -> Deployment:
        why = f"the {what} name {name} is taken by something this deployment did not make"
        state = DeployState.FAILED if d.config_exists else DeployState.REFUSED
        return self._change(d, state=state, failure=why)


def _name_taken(name: str) -> Refusal:
    return Refusal(
        Rule.ENDPOINT_NAME_TAKEN,
        f"an endpoint named {name} exists already and this deployment did not make it",
    )


def _joined(refusals: Sequence[Refusal]) -> str:
    return "; ".join(str(r) for r in refusals)
