"""Policies in deploy/ read against AWS's Service Authorization Reference.

Each check returns the problems it found, in words: an action the code calls (or one of
its dependent actions) that no statement grants on the resource type AWS authorizes it
against; a statement that scopes an action to a resource type the action does not
authorize against (it then allows nothing for that action: IAM User Guide, "Resource"
element); a condition key AWS does not evaluate for the action (the condition can then
never be met, or, negated, never restrict). The reference is aws_sandbox.iam_reference.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from aws_sandbox import iam_reference as reference
from aws_sandbox.iam_reference import ActionReference

Document = Mapping[str, Any]


def _listed(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _statements(documents: Iterable[Document]) -> Iterator[Mapping[str, Any]]:
    for document in documents:
        yield from document["Statement"]


def _named(statement: Mapping[str, Any]) -> str:
    return str(statement.get("Sid", "(a statement without Sid)"))


def needed(calls: Iterable[str]) -> dict[str, set[str]]:
    """action -> the resource types it must be granted on ("" when any will do), for the
    calls and, transitively, their dependent actions. A dependent action is needed on the
    resource types of the action that needs it, where it authorizes against them."""
    want: dict[str, set[str]] = {}
    todo = [(call, None) for call in sorted(calls)]
    while todo:
        name, parent = todo.pop()
        entry = reference.action(name)
        if entry is None:
            want.setdefault(name, set())
            continue
        if parent is None:
            kinds = set(entry.required_types) or {""}
        else:
            kinds = set(parent.required_types) & set(entry.resource_types) or {""}
        if kinds <= want.get(name, set()):
            continue
        want.setdefault(name, set()).update(kinds)
        todo += [(dependent, entry) for dependent in entry.dependent_actions]
    return want


def _grants(statement: Mapping[str, Any], action: str, kind: str) -> bool:
    if statement.get("Effect") != "Allow":
        return False
    if not any(fnmatchcase(action.lower(), a.lower()) for a in _listed(statement["Action"])):
        return False
    service = action.split(":")[0]
    for resource in _listed(statement["Resource"]):
        if resource == "*":
            return True
        named = reference.resource_types_of(service, resource)
        if kind and kind in named:
            return True
        entry = reference.action(action)
        if not kind and entry is not None and named & set(entry.resource_types):
            return True
    return False


def missing_grants(documents: Sequence[Document], calls: Iterable[str]) -> list[str]:
    problems = []
    for action, kinds in sorted(needed(calls).items()):
        if reference.action(action) is None:
            problems.append(f"{action} is not in AWS's Service Authorization Reference")
            continue
        for kind in sorted(kinds):
            if not any(_grants(s, action, kind) for s in _statements(documents)):
                on = f"on its resource type {kind}" if kind else "on any resource"
                problems.append(f"no statement grants {action} {on}")
    return problems


def _action_entries(statement: Mapping[str, Any]) -> Iterator[tuple[str, ActionReference | None]]:
    for action in _listed(statement["Action"]):
        yield action, reference.action(action)


def misplaced_scopes(documents: Sequence[Document]) -> list[str]:
    problems = []
    for statement in _statements(documents):
        for action, entry in _action_entries(statement):
            if entry is None:
                problems.append(f"{_named(statement)}: {action} is not in AWS's reference")
                continue
            service = action.split(":")[0]
            for resource in _listed(statement["Resource"]):
                if resource == "*":
                    continue
                kinds = reference.resource_types_of(service, resource)
                if not kinds & set(entry.resource_types):
                    problems.append(
                        f"{_named(statement)} scopes {action} to {resource}, a resource type "
                        f"it does not authorize against (it authorizes against: "
                        f"{', '.join(entry.resource_types) or 'no resource type, only *'})"
                    )
    return problems


def unsupported_keys(documents: Sequence[Document]) -> list[str]:
    problems = []
    for statement in _statements(documents):
        keys = [k for block in statement.get("Condition", {}).values() for k in block]
        for action, entry in _action_entries(statement):
            if entry is None:
                continue
            service = action.split(":")[0]
            kinds: set[str] = set()
            for resource in _listed(statement["Resource"]):
                if resource == "*":
                    kinds |= set(entry.resource_types)
                else:
                    kinds |= reference.resource_types_of(service, resource)
            for key in keys:
                if not reference.supports_key(entry, kinds & set(entry.resource_types), key):
                    problems.append(
                        f"{_named(statement)} conditions {action} on {key}, a key AWS does "
                        "not evaluate for it"
                    )
    return problems
