"""Check request parameters against botocore's service model before sending them.

botocore checks types and required members client-side; AWS checks enums, maximums and
patterns on the server. Both halves run here, so a plan printed for review is one AWS
would accept as written. The server half is the bot's own reading of the model, written
apart from the sandbox's (aws_sandbox/shapes.py): the sandbox refuses what AWS would, so
a mistake in either one shows as a disagreement in the tests instead of being shared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import botocore.session
import regex
from botocore.model import ServiceModel, Shape
from botocore.validate import ParamValidator


@cache
def service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def request_problems(service: str, operation: str, params: Mapping[str, Any]) -> list[str]:
    """Every way `params` breaks `operation`'s input shape; empty when AWS would take it."""
    shape = service_model(service).operation_model(operation).input_shape
    if shape is None:
        return [f"{operation}: takes no parameters"] if params else []
    report = ParamValidator().validate(dict(params), shape)
    problems = [report.generate_report()] if report.has_errors() else []
    problems += [f"{where}: {value!r}: {why}" for where, value, why in _broken(params, shape, "")]
    return [f"{operation}: {p}" for p in problems]


def _broken(value: Any, shape: Shape, where: str) -> Iterator[tuple[str, Any, str]]:
    """(member path, value, the constraint it breaks) for each server-side constraint:
    maximum length or value, enum, pattern (matched whole)."""
    most = shape.metadata.get("max")
    if most is not None and not isinstance(value, bool):
        size = value if isinstance(value, int) else len(value) if hasattr(value, "__len__") else 0
        if size > most:
            yield where, value, f"more than the maximum {most}"
    kind = shape.type_name
    if kind == "structure" and isinstance(value, Mapping):
        members = shape.members  # type: ignore[attr-defined]
        for name, member in value.items():
            if name in members:
                yield from _broken(member, members[name], f"{where}.{name}".lstrip("."))
    elif kind == "list" and isinstance(value, list | tuple):
        for n, item in enumerate(value, 1):
            yield from _broken(item, shape.member, f"{where}[{n}]")  # type: ignore[attr-defined]
    elif kind == "map" and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _broken(item, shape.value, f"{where}[{key}]")  # type: ignore[attr-defined]
    elif kind == "string" and isinstance(value, str):
        allowed = shape.enum  # type: ignore[attr-defined]
        if allowed and value not in allowed:
            yield where, value, f"not one of {', '.join(allowed)}"
        pattern = shape.metadata.get("pattern")
        if pattern and _pattern(pattern).fullmatch(value) is None:
            yield where, value, f"does not match the pattern {pattern}"


@cache
def _pattern(text: str) -> regex.Pattern[str]:
    """A model pattern as AWS applies it: to the whole value, with the Unicode property
    classes (`\\p{L}`) the `regex` package reads, and a Java surrogate pair written as
    two escapes read as the one character it stands for."""
    return regex.compile(regex.sub(r"\\u(D[89ABab]\w\w)\\u(D[C-Fc-f]\w\w)", _one_character, text))


def _one_character(pair: regex.Match[str]) -> str:
    high, low = (int(half, 16) for half in pair.groups())
    return "\\U%08X" % (0x10000 + (high - 0xD800) * 0x400 + (low - 0xDC00))
