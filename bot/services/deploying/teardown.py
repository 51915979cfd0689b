"""Cleaning up: the undeploy job deletes what is tagged for a deployment and only calls
it done when AWS shows nothing left; deployments whose endpoint went with the request's
cleanup are settled; `status` is what AWS says now."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.domain.deployment.record import (
    TAG_DEPLOYMENT,
    DeployedComponent,
    Deployment,
    DeployState,
)
from bot.domain.records import CapacityRecord
from bot.services.actor import Actor
from bot.services.changes import BOT
from bot.services.deploying.base import DeploymentRecords
from bot.services.deploying.jobs import DELETE_ORDER, POLL, STANDING, undeploy_job
from bot.services.jobs import RetryLater
from bot.services.ports.deployments import DeploymentConflict
from bot.services.ports.hosting import HostingError, Resource

log = logging.getLogger(__name__)


class DeployTeardown(DeploymentRecords):
    def settle_request(self, request_id: str) -> None:
        """The `deploy-gone` job: each standing deployment of the request, settled."""
        for d in self.deployments.deployments_of(request_id):
            self._settle_if_gone(d)

    def standing_of(self, records: Sequence[CapacityRecord]) -> list[Deployment]:
        """The deployments of these requests that are queued or may hold resources in AWS
        (not refused, not verified gone): what App Home lists under "Your endpoints"."""
        found = [
            d
            for record in records
            if record.reservation is not None
            for d in self.deployments.deployments_of(record.id)
        ]
        return [d for d in found if not d.state.final]

    def cleanup(self, deployment_id: str, actor: Actor) -> str:
        """Start deleting a deployment (the Clean up button, `/gpu cleanup D3`); what to
        tell the person. The undeploy job deletes and verifies."""
        d = self.deployments.deployment(deployment_id)
        if d is None:
            return f"There is no deployment {deployment_id}."
        user = actor.user
        if user != d.requester and not actor.is_approver:
            return f"Only {d.id}'s requester or an approver can clean it up."
        if d.state is DeployState.DELETED:
            return f"{d.id} is cleaned up already: nothing tagged for it is left."
        if d.state is DeployState.REFUSED:
            return f"{d.id} was refused before anything was made: nothing to clean up."
        if d.state is DeployState.DELETING:
            return f"{d.id} is being cleaned up; you will see it in its message."
        now = self.clock.now()
        try:
            self.deployments.save_deployment(
                d,
                d.model_copy(update={"state": DeployState.DELETING, "updated_at": now}),
                [undeploy_job(d.id, now)],
            )
        except DeploymentConflict:
            return f"{d.id} changed just now; press again."
        self._audit(d.request_id, "undeploy-requested", user, f"{d.id}: {d.endpoint_name}")
        return (
            f"Cleaning up {d.id}: its inference components, then endpoint `{d.endpoint_name}`, "
            "then its configuration. Its message says when nothing is left."
        )

    def cleanup_request(self, request_id: str, actor: Actor) -> list[str]:
        """`/gpu cleanup R3`: every deployment of the request that may hold something."""
        live = [d for d in self.deployments.deployments_of(request_id) if d.state.live]
        if not live:
            return [f"{request_id} has no deployment holding anything in AWS."]
        return [self.cleanup(d.id, actor) for d in live]

    def run_undeploy(self, deployment_id: str) -> Deployment | None:
        d = self.deployments.deployment(deployment_id)
        if d is None or d.state is not DeployState.DELETING:
            return d
        d = self._ensure_message(d)
        try:
            d = self._delete_step(d)
        except HostingError as error:
            self._show(d)
            raise RetryLater(self.clock.now() + POLL, f"AWS: {error}") from error
        self._show(d)
        if d.state is DeployState.DELETING:
            raise RetryLater(self.clock.now() + POLL, f"{d.id}: waiting for deletions")
        return d

    def _delete_step(self, d: Deployment) -> Deployment:
        """One pass: delete the first kind still there (components, endpoint, config),
        and only when AWS shows nothing tagged for the deployment call it done."""
        region, account = d.region, d.account
        found = self.hosting.components(account, region, d.endpoint_name)
        ours = [c for c in found if self._ours(d, c)]
        components = tuple(
            c.model_copy(update={"status": _status_of(c.name, ours, "Deleted"), "reason": None})
            for c in d.components
        )
        if ours:
            for c in ours:
                if c.status != "Deleting":
                    self.hosting.delete(account, region, "inference-component", c.name)
            return self._change(d, components=_deleting(components, ours))
        endpoint = self.hosting.endpoint(account, region, d.endpoint_name)
        if endpoint is not None and self._ours(d, endpoint):
            if endpoint.status != "Deleting":
                self.hosting.delete(account, region, "endpoint", d.endpoint_name)
            return self._change(d, components=components, endpoint_status="Deleting")
        config = self.hosting.config(account, region, d.config_name)
        if config is not None and self._ours(d, config):
            self.hosting.delete(account, region, "endpoint-config", d.config_name)
        left = self.hosting.tagged(account, region, TAG_DEPLOYMENT, d.id)
        if left:
            # Made by a deploy step that raced the cleanup: delete it on the next pass.
            for kind, name in sorted(left, key=lambda item: DELETE_ORDER.index(item[0])):
                self.hosting.delete(account, region, kind, name)
            return self._change(d, components=components)
        done = self._change(
            d,
            components=components,
            endpoint_status="Deleted",
            config_exists=False,
            state=DeployState.DELETED,
        )
        self._audit(d.request_id, "undeployed", BOT, f"{d.id}: nothing tagged for it is left")
        return done

    def _settle_if_gone(self, d: Deployment) -> Deployment:
        """A standing deployment with nothing tagged for it left in AWS is recorded as
        cleaned up (its message says so, and App Home stops listing it); else as it is.
        Raises HostingError when AWS does not answer."""
        if d.state not in STANDING:
            return d
        account, region = d.account, d.region
        if self.hosting.tagged(account, region, TAG_DEPLOYMENT, d.id):
            return d
        if self.hosting.endpoint(account, region, d.endpoint_name) is not None:
            return d  # there, but not tagged as ours: not ours to call gone
        gone = tuple(
            c.model_copy(update={"status": "Deleted", "reason": None}) for c in d.components
        )
        done = self._change(
            d,
            components=gone,
            endpoint_status="Deleted",
            config_exists=False,
            state=DeployState.DELETED,
        )
        self._audit(
            d.request_id,
            "undeployed",
            BOT,
            f"{d.id}: nothing tagged for it is left (removed with the request's cleanup or "
            "outside the bot)",
        )
        self._show(done)
        return done

    def status(self, deployment_id: str) -> Deployment | None:
        """The deployment with what AWS says of it now; one whose endpoint is gone from
        AWS is recorded as cleaned up (nothing else is saved)."""
        d = self.deployments.deployment(deployment_id)
        if d is None or not d.state.live:
            return d
        try:
            d = self._settle_if_gone(d)
        except HostingError:
            log.warning("status of %s: AWS did not answer", d.id, exc_info=True)
            return d
        if not d.state.live:
            return d
        try:
            endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
            found = self.hosting.components(d.account, d.region, d.endpoint_name)
        except HostingError:
            log.warning("status of %s: AWS did not answer", d.id, exc_info=True)
            return d
        by_name = {c.name: c for c in found}
        # Not there yet while deploying; gone (deleted outside the bot) once it was made.
        absent = None if d.state is DeployState.DEPLOYING else "gone"
        return d.model_copy(
            update={
                "endpoint_status": endpoint.status if endpoint else d.endpoint_status and "gone",
                "components": tuple(
                    c.model_copy(
                        update={
                            "status": by_name[c.name].status if c.name in by_name else absent,
                            "reason": by_name[c.name].reason if c.name in by_name else None,
                        }
                    )
                    for c in d.components
                ),
            }
        )


def _status_of(name: str, found: Sequence[Resource], missing: str) -> str | None:
    return next((c.status for c in found if c.name == name), missing)


def _deleting(
    components: tuple[DeployedComponent, ...], ours: Sequence[Resource]
) -> tuple[DeployedComponent, ...]:
    names = {c.name for c in ours}
    return tuple(
        c.model_copy(update={"status": "Deleting"}) if c.name in names else c for c in components
    )
