"""EC2 `Filters` matching: named fields, `tag:KEY`, `tag-key`, `tag-value`, wildcards."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from aws_sandbox.errors import ec2_invalid

Tags = Sequence[Mapping[str, str]]
# A filter name -> the record's values it compares against.
FilterFields = Mapping[str, Callable[[Any], Iterable[str]]]


def ec2_filter(
    filters: Sequence[Mapping[str, Any]], fields: FilterFields, tags_of: Callable[[Any], Tags]
) -> Callable[[Any], bool]:
    """A predicate for records matching every filter; unknown names are refused as EC2 does."""
    checks: list[Callable[[Any], bool]] = []
    for spec in filters:
        name, patterns = str(spec.get("Name", "")), [str(v) for v in spec.get("Values", [])]
        values = _values_for(name, fields, tags_of)
        checks.append(_any_match(values, patterns))
    return lambda record: all(check(record) for check in checks)


def _values_for(
    name: str, fields: FilterFields, tags_of: Callable[[Any], Tags]
) -> Callable[[Any], Iterable[str]]:
    if name.startswith("tag:"):
        key = name.removeprefix("tag:")
        return lambda record: [t["Value"] for t in tags_of(record) if t["Key"] == key]
    if name == "tag-key":
        return lambda record: [t["Key"] for t in tags_of(record)]
    if name == "tag-value":
        return lambda record: [t["Value"] for t in tags_of(record)]
    if name in fields:
        return fields[name]
    raise ec2_invalid(f"The filter '{name}' is invalid")


def _any_match(
    values: Callable[[Any], Iterable[str]], patterns: list[str]
) -> Callable[[Any], bool]:
    # EC2 filter values take * and ? wildcards, case-sensitively.
    return lambda record: any(fnmatchcase(v, p) for v in values(record) for p in patterns)
