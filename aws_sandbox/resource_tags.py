"""The tags of an existing resource, by ARN, read as the market itself lists them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aws_sandbox.errors import SandboxError

Route = Callable[[Mapping[str, Any], str], dict[str, Any]]


def resource_tags(routes: Mapping[str, Mapping[str, Route]], arn: str) -> dict[str, str] | None:
    """The resource's tags; None when the market has no such resource. Resources the
    market does not keep (IAM roles) have none."""
    _, _, service, region, _, path = arn.split(":", 5)
    kind, _, ident = path.partition("/")
    try:
        if service == "ec2" and kind == "instance":
            found = routes["ec2"]["DescribeInstances"]({"InstanceIds": [ident]}, region)
            items = [i for r in found["Reservations"] for i in r["Instances"]]
        elif service == "ec2" and kind == "capacity-reservation":
            found = routes["ec2"]["DescribeCapacityReservations"](
                {"CapacityReservationIds": [ident]}, region
            )
            items = found["CapacityReservations"]
        elif service == "sagemaker":
            items = [routes["sagemaker"]["ListTags"]({"ResourceArn": arn}, region)]
        else:
            return {}
    except SandboxError:
        return None
    if not items:
        return None
    return {t["Key"]: t.get("Value", "") for t in items[0].get("Tags", [])}
