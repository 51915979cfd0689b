"""What every part of the deployment service shares: its collaborators, the record's
compare-and-set, its progress message and the request's audit trail."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from bot.blocks.deploy import progress
from bot.domain.catalog import Catalog
from bot.domain.deployment.record import (
    TAG_DEPLOYMENT,
    Deployment,
    DeployState,
)
from bot.domain.records import SlackMessage
from bot.services.changes import BOT, RequestChanges
from bot.services.compare_and_set import TooManyConflicts, compare_and_set
from bot.services.delivery import OnceOnly
from bot.services.deploying.jobs import DEFAULT_WARNING, POLL
from bot.services.jobs import RetryLater
from bot.services.ports import Clock
from bot.services.ports.deployments import DeploymentConflict, Deployments
from bot.services.ports.hosting import Hosting, Resource

_STAMPS = {"updated_at", "version"}  # what a save changes by itself


class DeploymentRecords:
    """The state the parts share; each part (orders, building, teardown, plan end) adds
    its own job's methods to it."""

    def __init__(
        self,
        changes: RequestChanges,
        deployments: Deployments,
        hosting: Hosting,
        delivery: OnceOnly,
        catalog: Catalog,
        clock: Clock,
        namespace: str,
        *,
        approval_channel: str,
        warn_before_end: Sequence[timedelta] = (),
    ) -> None:
        self.approval_channel = approval_channel
        self.warn_before = max(warn_before_end, default=DEFAULT_WARNING)
        self.changes = changes
        self.store = changes.store
        self.deployments = deployments
        self.hosting = hosting
        self.delivery = delivery
        self.catalog = catalog
        self.clock = clock
        self.namespace = namespace

    def _ours(self, d: Deployment, found: Resource) -> bool:
        return found.tags.get(TAG_DEPLOYMENT) == d.id

    def _change(self, d: Deployment, **update: Any) -> Deployment:
        """Compare-and-set these fields; on a conflict, apply them to the fresh record."""

        def decide(current: Deployment) -> Deployment | None:
            new = current.model_copy(update={**update, "updated_at": self.clock.now()})
            unchanged = new.model_dump(exclude=_STAMPS) == current.model_dump(exclude=_STAMPS)
            return None if unchanged else new

        def write(current: Deployment, new: Deployment) -> Deployment:
            return self.deployments.save_deployment(current, new)

        def read() -> Deployment | None:
            return self.deployments.deployment(d.id)

        try:
            result = compare_and_set(
                read,
                decide,
                write,
                DeploymentConflict,
                first=d,
                what=d.id,
            )
        except TooManyConflicts as exc:
            raise RetryLater(self.clock.now() + POLL, f"{d.id}: changed by others") from exc
        saved, written = result
        if saved is None:
            raise DeploymentConflict(f"{d.id} is gone")
        failed = saved.state in (DeployState.FAILED, DeployState.REFUSED)
        if written is not None and saved.state is not d.state and failed:
            self._audit(saved.request_id, f"deploy-{saved.state.value}", BOT,
                        f"{saved.id}: {saved.failure}")  # fmt: skip
        return saved

    def _ensure_message(self, d: Deployment) -> Deployment:
        if d.message is not None:
            return d
        key = f"deploy:{d.id}"
        message = progress(d)
        posted = self.delivery.send(key, d.requester, message.text, message.blocks)
        if posted is None:  # posted by an earlier run that died before saving it
            record = self.store.delivery(key)
            if record is None or record.ts is None:
                return d
            posted = SlackMessage(channel=record.channel, ts=record.ts)
        return self._change(d, message=posted)

    def _show(self, d: Deployment) -> None:
        if d.message is not None:
            message = progress(d)
            self.delivery.update(d.message, message.text, message.blocks)

    def _audit(
        self, request_id: str, action: str, actor: str, detail: str, usd: float | None = None
    ) -> None:
        """An entry in the request's audit trail (no state change)."""
        self.changes.note(request_id, action, detail, actor, usd=usd)

    def get(self, deployment_id: str) -> Deployment | None:
        return self.deployments.deployment(deployment_id)

    def of_request(self, request_id: str) -> list[Deployment]:
        return self.deployments.deployments_of(request_id)
