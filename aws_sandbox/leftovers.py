"""What people leave running, placed as a person would have launched it: instances (see
instances.py for RunInstances and its rules) and SageMaker endpoints on the hosting desk
(hosting.py). Tests and the shell set a scene with `place_instance` / `place_endpoint`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_sandbox.hosting import Hosting
from aws_sandbox.instances import Instances


class Leftovers:
    def __init__(self, instances: Instances, hosting: Hosting) -> None:
        self._instances = instances
        self._hosting = hosting

    def place_instance(
        self,
        region: str,
        instance_type: str,
        tags: Mapping[str, str] | None = None,
        reservation_id: str | None = None,
    ) -> str:
        return self._instances.place(region, instance_type, tags, reservation_id)

    def place_endpoint(
        self,
        region: str,
        name: str,
        plan_arn: str,
        instance_type: str,
        components: int = 0,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """An endpoint on `plan_arn`, its config `NAME-config` and `components` inference
        components, already in service (the hosting desk answers for them)."""
        self._hosting.place_endpoint(region, name, plan_arn, instance_type, components, tags)

    def list_endpoints(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return self._hosting.list_endpoints(params, region)

    def describe_instances(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return self._instances.describe(params, region)
