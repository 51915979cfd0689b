"""Deployment records in the store: created and changed by compare-and-set, with their
jobs written in the same step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bot.domain.deployment.record import Deployment
from bot.services.ports.jobs import Job


class DeploymentConflict(Exception):
    """Someone else changed the deployment first; re-read and decide again."""


class Deployments(Protocol):
    def next_deployment_id(self) -> str: ...

    def deployment(self, deployment_id: str) -> Deployment | None: ...

    def deployments_of(self, request_id: str) -> list[Deployment]:
        """Every deployment made on the request, oldest first."""
        ...

    def save_deployment(
        self,
        old: Deployment | None,
        new: Deployment,
        schedule: Sequence[Job] = (),
        cancel: Sequence[str] = (),
    ) -> Deployment:
        """Compare-and-set `new` over `old` (None: it must not exist yet), writing the
        jobs in the same step; `DeploymentConflict` when `old` is not the stored one."""
        ...
