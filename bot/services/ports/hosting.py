"""SageMaker hosting as the deploy service sees it: training plans, models, endpoint
configurations, endpoints and inference components, found by name and read with their
tags, created from requests the domain built and checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.domain.deployment import ReservedPlan


class HostingError(Exception):
    """AWS refused a hosting call (its code and message), or did not answer."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Resource:
    """A config, endpoint or inference component as AWS reports it now."""

    name: str
    status: str | None = None  # None for a config (it has no status)
    reason: str | None = None  # FailureReason
    tags: Mapping[str, str] = field(default_factory=dict)
    endpoint: str | None = None  # a component's endpoint


class Hosting(Protocol):
    def training_plan(self, account: str, region: str, arn: str) -> ReservedPlan | None:
        """The plan as DescribeTrainingPlan reports it; None when AWS has no such plan."""
        ...

    def models(self, account: str, region: str) -> list[str]:
        """SageMaker model names (ListModels)."""
        ...

    def model_role(self, account: str, region: str, model: str) -> str | None:
        """The model's execution role (the endpoint runs under it); None if unknown."""
        ...

    def config(self, account: str, region: str, name: str) -> Resource | None: ...

    def endpoint(self, account: str, region: str, name: str) -> Resource | None: ...

    def components(self, account: str, region: str, endpoint: str) -> list[Resource]: ...

    def create(self, account: str, region: str, operation: str, params: dict[str, Any]) -> None:
        """CreateEndpointConfig, CreateEndpoint or CreateInferenceComponent."""
        ...

    def delete(self, account: str, region: str, kind: str, name: str) -> None:
        """Delete an inference-component, endpoint or endpoint-config; gone already is
        not an error."""
        ...

    def tagged(self, account: str, region: str, key: str, value: str) -> Sequence[tuple[str, str]]:
        """(kind, name) of every config, endpoint and inference component whose tag
        `key` has `value`."""
        ...
