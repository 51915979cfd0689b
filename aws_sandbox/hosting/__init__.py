"""SageMaker hosting in the sandbox: models, endpoint configurations, endpoints and
inference components (one module each), with states that follow the clock and AWS's
rules for endpoints on training plans and MIG partitions. `Hosting` answers their
operations and sets a scene for tests and the shell (`place_endpoint`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aws_sandbox.errors import sagemaker_invalid
from aws_sandbox.hosting.components import InferenceComponents
from aws_sandbox.hosting.configs import EndpointConfigs
from aws_sandbox.hosting.endpoints import Endpoints
from aws_sandbox.hosting.models import DEMO_MODELS, Models
from aws_sandbox.hosting.resources import ARN_KIND, HostingTimes
from aws_sandbox.parts import MarketParts

__all__ = ["DEMO_MODELS", "Hosting", "HostingTimes"]

Route = Callable[[Mapping[str, Any], str], dict[str, Any]]


class Hosting:
    def __init__(
        self,
        parts: MarketParts,
        times: HostingTimes | None = None,
        models: Sequence[str] = DEMO_MODELS,
    ) -> None:
        times = times or HostingTimes()
        self._models = Models(parts, times, models)
        self._configs = EndpointConfigs(parts, times)
        self._endpoints = Endpoints(parts, times)
        self._components = InferenceComponents(parts, times, self._endpoints)

    def routes(self) -> dict[str, Route]:
        models, configs = self._models, self._configs
        endpoints, components = self._endpoints, self._components
        routes: dict[str, Route] = {
            "CreateModel": models.create_model,
            "DescribeModel": models.describe_model,
            "ListModels": models.list_models,
            "DeleteModel": models.delete_model,
            "CreateEndpointConfig": configs.create_config,
            "DescribeEndpointConfig": configs.describe_config,
            "ListEndpointConfigs": configs.list_configs,
            "DeleteEndpointConfig": configs.delete_config,
            "CreateEndpoint": endpoints.create_endpoint,
            "DescribeEndpoint": endpoints.describe_endpoint,
            "ListEndpoints": endpoints.list_endpoints,
            "DeleteEndpoint": endpoints.delete_endpoint,
            "CreateInferenceComponent": components.create_component,
            "DescribeInferenceComponent": components.describe_component,
            "ListInferenceComponents": components.list_components,
            "DeleteInferenceComponent": components.delete_component,
            "ListTags": self.list_tags,
        }
        return {op: self._seeding(answer) for op, answer in routes.items()}

    def _seeding(self, answer: Route) -> Route:
        def seeded(params: Mapping[str, Any], region: str) -> dict[str, Any]:
            self._models.seed(region)
            return answer(params, region)

        return seeded

    def list_endpoints(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return self._endpoints.list_endpoints(params, region)

    def instances_on_plan(self, plan_arn: str, region: str) -> int:
        return self._endpoints.instances_on_plan(plan_arn, region)

    # --- placed by hand (tests, the shell) ---------------------------------------------------

    def place_endpoint(
        self,
        region: str,
        name: str,
        plan_arn: str,
        instance_type: str,
        components: int = 0,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """An endpoint launched outside the bot, already in service, with its config
        `NAME-config` and `components` inference components, each carrying `tags`: no
        rule is checked."""
        self._endpoints.place(region, name, plan_arn, instance_type, components, tags)

    # --- tags ------------------------------------------------------------------------------

    def list_tags(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        arn = str(params["ResourceArn"])
        kind, _, name = arn.rpartition(":")[2].partition("/")
        by_arn_kind = {v: k for k, v in ARN_KIND.items()}
        live = (
            self._endpoints._find(by_arn_kind[kind], region, name) if kind in by_arn_kind else None
        )
        if live is None or live.record["arn"] != arn:
            raise sagemaker_invalid(f"Resource {arn} does not exist.")
        return {"Tags": live.record["tags"]}
