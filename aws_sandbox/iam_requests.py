"""What IAM is asked for one call: each action, on which resource ARN, with which context.

For the call's own action, the resources it names (per resource type the Service
Authorization Reference says it authorizes against; a resource being created has the ID
`*`), the tags the request carries (`aws:RequestTag/KEY`, `aws:TagKeys`) and, for an
existing resource, its tags (`aws:ResourceTag/KEY`). Then the reference's dependent
actions of each resource type the call names, each judged as well: the tagging action on
what is tagged at creation, only when the request carries tags, with `ec2:CreateAction` /
`sagemaker:TaggingAction` naming the call (EC2 User Guide, "Grant permission to tag
resources during creation",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/supported-iam-actions-tagging.html);
`iam:PassRole` on the role the request passes, with `iam:PassedToService`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aws_sandbox import iam_reference as reference

# arn -> the resource's tags, or None when no such resource exists.
TagsOf = Callable[[str], Mapping[str, str] | None]
# (params, region, account) -> resource type -> ARNs
Named = Callable[[Mapping[str, Any], str, str], dict[str, list[str]]]
TAGGING = {"ec2": "ec2:CreateTags", "sagemaker": "sagemaker:AddTags"}
CREATE_ACTION_KEY = {"ec2": "ec2:CreateAction", "sagemaker": "sagemaker:TaggingAction"}


@dataclass(frozen=True)
class Check:
    action: str
    resource: str
    context: dict[str, list[str]]


def _arn(service: str, region: str, account: str, path: str) -> str:
    return f"arn:aws:{service}:{region}:{account}:{path}"


def _one(kind: str, service: str, param: str, *, lower: bool = False) -> Named:
    def named(params: Mapping[str, Any], region: str, account: str) -> dict[str, list[str]]:
        value = str(params[param])
        if value.startswith("arn:"):
            return {kind: [value]}
        return {
            kind: [_arn(service, region, account, f"{kind}/{value.lower() if lower else value}")]
        }

    return named


def _new(kind: str, service: str) -> Named:
    return lambda params, region, account: {kind: [_arn(service, region, account, f"{kind}/*")]}


def _both(*parts: Named) -> Named:
    def named(params: Mapping[str, Any], region: str, account: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for part in parts:
            for kind, arns in part(params, region, account).items():
                found.setdefault(kind, []).extend(arns)
        return found

    return named


def _instances(params: Mapping[str, Any], region: str, account: str) -> dict[str, list[str]]:
    return {
        "instance": [_arn("ec2", region, account, f"instance/{i}") for i in params["InstanceIds"]]
    }


def _by_arn(params: Mapping[str, Any], region: str, account: str) -> dict[str, list[str]]:
    arn = str(params["ResourceArn"])
    return {arn.split(":", 5)[5].split("/")[0]: [arn]}


def _role(params: Mapping[str, Any], region: str, account: str) -> dict[str, list[str]]:
    return {"role": [str(params["RoleArn"])]}


def _sm(kind: str, param: str) -> Named:
    # SageMaker writes the names of hosting resources in lower case in their ARNs.
    return _one(kind, "sagemaker", param, lower=True)


# The resources each call names, by the operation's request parameters (API references).
NAMED: dict[str, Named] = {
    "ec2:PurchaseCapacityBlock": _new("capacity-reservation", "ec2"),
    "ec2:CreateCapacityReservation": _new("capacity-reservation", "ec2"),
    "ec2:PurchaseCapacityBlockExtension": _one(
        "capacity-reservation", "ec2", "CapacityReservationId"
    ),
    "ec2:DescribeCapacityBlockExtensionOfferings": _one(
        "capacity-reservation", "ec2", "CapacityReservationId"
    ),
    "ec2:CancelCapacityReservation": _one("capacity-reservation", "ec2", "CapacityReservationId"),
    "ec2:TerminateInstances": _instances,
    "sagemaker:CreateTrainingPlan": _one("training-plan", "sagemaker", "TrainingPlanName"),
    "sagemaker:DescribeTrainingPlan": _one("training-plan", "sagemaker", "TrainingPlanName"),
    "sagemaker:CreateModel": _sm("model", "ModelName"),
    "sagemaker:DescribeModel": _sm("model", "ModelName"),
    "sagemaker:DeleteModel": _sm("model", "ModelName"),
    "sagemaker:CreateEndpointConfig": _sm("endpoint-config", "EndpointConfigName"),
    "sagemaker:DescribeEndpointConfig": _sm("endpoint-config", "EndpointConfigName"),
    "sagemaker:DeleteEndpointConfig": _sm("endpoint-config", "EndpointConfigName"),
    "sagemaker:CreateEndpoint": _both(
        _sm("endpoint", "EndpointName"), _sm("endpoint-config", "EndpointConfigName")
    ),
    "sagemaker:DescribeEndpoint": _sm("endpoint", "EndpointName"),
    "sagemaker:DeleteEndpoint": _sm("endpoint", "EndpointName"),
    "sagemaker:CreateInferenceComponent": _both(
        _sm("inference-component", "InferenceComponentName"), _sm("endpoint", "EndpointName")
    ),
    "sagemaker:DescribeInferenceComponent": _sm("inference-component", "InferenceComponentName"),
    "sagemaker:DeleteInferenceComponent": _sm("inference-component", "InferenceComponentName"),
    "sagemaker:ListTags": _by_arn,
    "sts:AssumeRole": _role,
}
# The resource type a create call names by the name it gives the new resource (EC2's
# creates name no ID: their ARNs end in `/*`). It has no tags yet.
CREATES = {
    "sagemaker:CreateTrainingPlan": "training-plan",
    "sagemaker:CreateModel": "model",
    "sagemaker:CreateEndpointConfig": "endpoint-config",
    "sagemaker:CreateEndpoint": "endpoint",
    "sagemaker:CreateInferenceComponent": "inference-component",
}
# Dependent actions that authorize against a resource the call does not name.
DEPENDENT_NAMED: dict[str, Named] = {
    "sagemaker:CreateReservedCapacity": _new("reserved-capacity", "sagemaker"),
}


def request_tags(service: str, params: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """resource type ("" for all the call creates) -> the tags the request puts on it."""
    if service == "ec2":
        return {
            str(spec.get("ResourceType", "")): {t["Key"]: t.get("Value", "") for t in spec["Tags"]}
            for spec in params.get("TagSpecifications", [])
        }
    tags = params.get("Tags") or []
    return {"": {t["Key"]: t.get("Value", "") for t in tags}} if tags else {}


def _tag_context(tags: Mapping[str, str]) -> dict[str, list[str]]:
    context = {f"aws:RequestTag/{k}": [v] for k, v in tags.items()}
    return context | ({"aws:TagKeys": list(tags)} if tags else {})


def checks(
    action: str, params: Mapping[str, Any], region: str, account: str, tags_of: TagsOf
) -> Iterator[Check]:
    """Every (action, resource, context) IAM judges for the call `action`
    ("service:Operation")."""
    entry = reference.action(action)
    if entry is None:
        raise ValueError(f"{action} is not in the Service Authorization Reference")
    service = action.split(":")[0]
    tagged = request_tags(service, params)
    all_tags = {k: v for tags in tagged.values() for k, v in tags.items()}
    named = _named(action, entry.required_types, params, region, account)
    for kind, arns in named.items():
        for arn in arns:
            context = _tag_context(all_tags)
            if kind != CREATES.get(action) and not arn.endswith("/*") and arn != "*":
                existing = tags_of(arn)
                if existing is None:
                    continue  # no such resource: the service answers that it is not found
                context |= {f"aws:ResourceTag/{k}": [v] for k, v in existing.items()}
            yield Check(action, arn, context)
    yield from _dependents(action, named, params, region, account, tagged, all_tags)


def _named(
    action: str, required: tuple[str, ...], params: Mapping[str, Any], region: str, account: str
) -> dict[str, list[str]]:
    if action in NAMED:
        return NAMED[action](params, region, account)
    if required:
        raise ValueError(f"the sandbox does not know which {required} {action} names")
    return {"": ["*"]}


def _dependents(
    action: str,
    named: Mapping[str, list[str]],
    params: Mapping[str, Any],
    region: str,
    account: str,
    tagged: Mapping[str, Mapping[str, str]],
    all_tags: Mapping[str, str],
) -> Iterator[Check]:
    entry = reference.action(action)
    assert entry is not None
    service, operation = action.split(":")
    for row in entry.rows:
        if row.resource_type and row.resource_type not in named:
            continue
        for dependent in row.dependent_actions:
            if dependent == TAGGING.get(service):
                if not all_tags:
                    continue  # tagging is asked only of calls that tag
                context = _tag_context(all_tags) | {CREATE_ACTION_KEY[service]: [operation]}
                for arn in _tagged_arns(service, row.resource_type, named, tagged, region, account):
                    yield Check(dependent, arn, context)
            elif dependent == "iam:PassRole":
                role = params.get("ExecutionRoleArn")
                if role:
                    passed = {"iam:PassedToService": [f"{service}.amazonaws.com"]}
                    yield Check(dependent, str(role), passed)
            elif dependent in DEPENDENT_NAMED:
                made = DEPENDENT_NAMED[dependent](params, region, account)
                for arns in made.values():
                    for arn in arns:
                        yield Check(dependent, arn, _tag_context(all_tags))
                yield from _dependents(dependent, made, params, region, account, tagged, all_tags)
            else:
                yield Check(dependent, "*", {})


def _tagged_arns(
    service: str,
    kind: str,
    named: Mapping[str, list[str]],
    tagged: Mapping[str, Mapping[str, str]],
    region: str,
    account: str,
) -> list[str]:
    if service == "ec2":
        # EC2 tags each resource type the TagSpecifications name, as it creates them.
        return [_arn("ec2", region, account, f"{t}/*") for t in tagged if t]
    return list(named.get(kind, []))
