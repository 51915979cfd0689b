"""Identity-based policy evaluation, as AWS describes it.

https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html:
a request is denied unless a statement allows it (implicit deny); an explicit Deny in any
statement overrides every Allow. A statement applies when its Action (or NotAction)
matches the action, its Resource (or NotResource) matches the resource ARN, and every
condition in its Condition block is met (operators ANDed, keys within an operator ANDed,
values of one key ORed). Wildcards: `*` any run of characters, `?` one character; action
names compare case-insensitively, ARNs case-sensitively
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html).
Only what the bot's policies need is implemented; an operator this module does not know
raises, so a policy using one cannot be judged silently wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

# The context of one request: key (as written in policies, compared case-insensitively)
# -> its values. Absent keys are simply not there.
Context = Mapping[str, Sequence[str]]


class Decision(Enum):
    ALLOW = "allow"
    IMPLICIT_DENY = "implicit-deny"
    EXPLICIT_DENY = "explicit-deny"


@dataclass(frozen=True)
class Policies:
    """The identity-based policies attached to one principal."""

    documents: tuple[Mapping[str, Any], ...]

    def decide(self, action: str, resource: str, context: Context) -> Decision:
        allowed = False
        for document in self.documents:
            for statement in _statements(document):
                if not _applies(statement, action, resource, context):
                    continue
                if statement["Effect"] == "Deny":
                    return Decision.EXPLICIT_DENY
                allowed = True
        return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def _statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = document["Statement"]
    return [found] if isinstance(found, Mapping) else list(found)


def _listed(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _wildcard(pattern: str, value: str, *, ignore_case: bool) -> bool:
    return _compiled(pattern, ignore_case).fullmatch(value) is not None


@cache
def _compiled(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    flags = re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL
    return re.compile(_regex(pattern), flags)


def _regex(pattern: str) -> str:
    """`*` any run of characters, `?` one; everything else literal."""
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


def _applies(statement: Mapping[str, Any], action: str, resource: str, context: Context) -> bool:
    if "Action" in statement:
        if not any(_wildcard(a, action, ignore_case=True) for a in _listed(statement["Action"])):
            return False
    elif any(_wildcard(a, action, ignore_case=True) for a in _listed(statement["NotAction"])):
        return False
    if "Resource" in statement:
        if not any(
            _wildcard(r, resource, ignore_case=False) for r in _listed(statement["Resource"])
        ):
            return False
    elif any(_wildcard(r, resource, ignore_case=False) for r in _listed(statement["NotResource"])):
        return False
    return all(
        _condition(operator, key, _listed(values), context)
        for operator, block in statement.get("Condition", {}).items()
        for key, values in block.items()
    )


def _values(context: Context, key: str) -> list[str] | None:
    for name, values in context.items():
        if name.lower() == key.lower():
            return list(values)
    return None


def _condition(operator: str, key: str, wanted: list[str], context: Context) -> bool:
    """https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html"""
    present = _values(context, key)
    if operator == "Null":
        # "true": the key must be absent; "false": it must be there.
        return (present is None) == (wanted[0].lower() == "true")
    quantifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    negated = base.replace("Not", "", 1) if "Not" in base else None
    if present is None:
        # A key the request lacks: IfExists conditions, ForAllValues and negated operators
        # are met, the rest are not (the operators page, "...IfExists" and "Condition keys
        # not present in the request context").
        return if_exists or quantifier == "ForAllValues" or negated is not None
    test = _OPERATORS.get(negated or base)
    if test is None:
        raise ValueError(f"the sandbox's IAM evaluator does not know the operator {operator}")
    # Values of one key are ORed; a negated operator is met when no value matches.
    matches = [any(test(w, v) for w in wanted) != bool(negated) for v in present]
    if quantifier == "ForAllValues":
        return all(matches)
    if quantifier == "ForAnyValue":
        return any(matches)
    if quantifier == "":
        return all(matches) if negated else any(matches)
    raise ValueError(f"the sandbox's IAM evaluator does not know the operator {operator}")


def _like(pattern: str, value: str) -> bool:
    return _compiled(pattern, False).fullmatch(value) is not None


# The positive operators; "StringNotEquals" and the like are their negations.
_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda w, v: w == v,
    "StringEqualsIgnoreCase": lambda w, v: w.lower() == v.lower(),
    "StringLike": _like,
    "ArnEquals": lambda w, v: w == v,
    "ArnLike": _like,
    "Bool": lambda w, v: w.lower() == v.lower(),
}
