"""Checks against botocore's service models, in both directions.

botocore validates requests client-side for types, required members and minimums only;
AWS also enforces enums, maximums and patterns on the server. `request_violations` does
that server half, and `validate_response` holds every answer to the full output shape, so
nothing the sandbox says could not have come from AWS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import regex
from botocore.model import ListShape, MapShape, Shape, StringShape, StructureShape
from botocore.validate import ParamValidator


class SandboxResponseError(Exception):
    """A response AWS could not have sent: a bug in the sandbox, never the caller's fault."""


@dataclass(frozen=True)
class Violation:
    path: tuple[str | int, ...]  # member names, and 1-based list positions
    value: object
    constraint: str

    def aws_path(self) -> str:
        """How AWS names the member: `tags.1.member.key`."""
        return ".".join(
            f"{p}.member" if isinstance(p, int) else p[:1].lower() + p[1:] for p in self.path
        )


def validate_response(shape: Shape | None, response: Mapping[str, Any]) -> None:
    """Raise `SandboxResponseError` unless `response` fits the operation's output shape."""
    body = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    if shape is None:
        if body:
            raise SandboxResponseError("this operation's response has only ResponseMetadata")
        return
    report = ParamValidator().validate(body, shape)
    problems = [report.generate_report()] if report.has_errors() else []
    problems += [
        f"{'.'.join(map(str, v.path))}: {v.value!r}: {v.constraint}"
        for v in constraint_violations(body, shape)
    ]
    if problems:
        raise SandboxResponseError("\n".join(problems))


def constraint_violations(
    value: object, shape: Shape, path: tuple[str | int, ...] = ()
) -> list[Violation]:
    """The enum, maximum and pattern constraints `value` breaks (types are not checked)."""
    found = _over_maximum(value, shape, path)
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for name, member in value.items():
            if name in shape.members:
                found += constraint_violations(member, shape.members[name], (*path, name))
    elif isinstance(shape, ListShape) and isinstance(value, list | tuple):
        for i, item in enumerate(value, 1):
            found += constraint_violations(item, shape.member, (*path, i))
    elif isinstance(shape, MapShape) and isinstance(value, Mapping):
        for key, item in value.items():
            found += constraint_violations(item, shape.value, (*path, str(key)))
    elif isinstance(shape, StringShape) and isinstance(value, str):
        if shape.enum and value not in shape.enum:
            choices = ", ".join(shape.enum)
            found.append(Violation(path, value, f"Member must satisfy enum value set: [{choices}]"))
        pattern = shape.metadata.get("pattern")
        if pattern and not compiled(pattern).fullmatch(value):
            found.append(
                Violation(path, value, f"Member must satisfy regular expression pattern: {pattern}")
            )
    return found


def _over_maximum(value: object, shape: Shape, path: tuple[str | int, ...]) -> list[Violation]:
    limit = shape.metadata.get("max")
    if limit is None or isinstance(value, bool):
        return []
    if isinstance(value, int) and value > limit:
        return [Violation(path, value, f"Member must have value less than or equal to {limit}")]
    if isinstance(value, str | list | tuple) and len(value) > limit:
        return [Violation(path, value, f"Member must have length less than or equal to {limit}")]
    return []


@cache
def compiled(pattern: str) -> regex.Pattern[str]:
    """The model's pattern, matched whole as AWS's servers do (the models write them
    unanchored; AWS's API reference and its errors show them anchored). The `regex`
    package reads the Unicode classes the models use, such as `\\p{L}`, which `re`
    cannot; Java's UTF-16 surrogate pairs (`\\uD800\\uDC00`) become the code points they
    stand for. No pattern is skipped."""
    return regex.compile(_SURROGATE_PAIR.sub(_code_point, pattern))


# A high and a low surrogate written as two escapes: one supplementary code point in Java.
_SURROGATE_PAIR = regex.compile(r"\\u(D[89AB][0-9A-Fa-f]{2})\\u(D[C-Fa-f][0-9A-Fa-f]{2})")


def _code_point(match: regex.Match[str]) -> str:
    high, low = int(match[1], 16), int(match[2], 16)
    return f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}"


def request_violations(shape: Shape | None, params: Mapping[str, Any]) -> list[Violation]:
    return [] if shape is None else constraint_violations(params, shape)


def json_validation_message(violations: list[Violation]) -> str:
    """SageMaker's (and every JSON service's) wording for server-side constraint failures."""
    count = len(violations)
    details = "; ".join(
        f"Value '{v.value}' at '{v.aws_path()}' failed to satisfy constraint: {v.constraint}"
        for v in violations
    )
    return f"{count} validation error{'s' if count > 1 else ''} detected: {details}"


def ec2_validation_message(violation: Violation) -> str:
    v = violation
    return f"Value ({v.value}) for parameter {v.aws_path()} is invalid. {v.constraint}"
