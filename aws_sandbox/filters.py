"""EC2 `Filters` matching, per operation: the names its API reference page lists (named
fields and, only where listed, `tag:<key>`, `tag-key`, `tag-value`), with wildcards.

EC2 answers `InvalidParameterValue` "The filter '<name>' is invalid" for a name the
operation does not take; a name that works on one Describe* (a `tag:` filter on
DescribeInstances) is refused on another that does not document it
(DescribeCapacityReservations lists no tag filter at all)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_invalid

Tags = Sequence[Mapping[str, str]]
# A filter name -> the record's values it compares against.
FilterFields = Mapping[str, Callable[[Any], Iterable[str]]]

TAG_KEY_VALUE = "tag:<key>"
TAG_KEY = "tag-key"
TAG_VALUE = "tag-value"


@dataclass(frozen=True)
class Documented:
    """The filters one operation documents on its API reference `page`: `fields` are
    modelled by name; `tag_forms` are the tag filters the page lists (none unless it
    lists them); `unmodelled` are listed by the page but not answered by the sandbox."""

    page: str
    fields: FilterFields
    tag_forms: frozenset[str] = frozenset()
    unmodelled: frozenset[str] = frozenset()


def ec2_filter(
    filters: Sequence[Mapping[str, Any]],
    documented: Documented,
    tags_of: Callable[[Any], Tags] = lambda record: record.get("Tags", []),
) -> Callable[[Any], bool]:
    """A predicate for records matching every filter; names the operation does not
    document are refused as EC2 does."""
    checks: list[Callable[[Any], bool]] = []
    for spec in filters:
        name, patterns = str(spec.get("Name", "")), [str(v) for v in spec.get("Values", [])]
        values = _values_for(name, documented, tags_of)
        checks.append(_any_match(values, patterns))
    return lambda record: all(check(record) for check in checks)


def _values_for(
    name: str, documented: Documented, tags_of: Callable[[Any], Tags]
) -> Callable[[Any], Iterable[str]]:
    forms = documented.tag_forms
    if name.startswith("tag:") and TAG_KEY_VALUE in forms:
        key = name.removeprefix("tag:")
        return lambda record: [t["Value"] for t in tags_of(record) if t["Key"] == key]
    if name == TAG_KEY and TAG_KEY in forms:
        return lambda record: [t["Key"] for t in tags_of(record)]
    if name == TAG_VALUE and TAG_VALUE in forms:
        return lambda record: [t["Value"] for t in tags_of(record)]
    if name in documented.fields:
        return documented.fields[name]
    if name in documented.unmodelled:
        # Documented, so AWS would answer it; the sandbox does not guess how.
        raise SandboxError("SandboxNotModelled", f"the sandbox does not answer the filter {name}")
    raise ec2_invalid(f"The filter '{name}' is invalid")


def _any_match(
    values: Callable[[Any], Iterable[str]], patterns: list[str]
) -> Callable[[Any], bool]:
    # EC2 filter values take * and ? wildcards, case-sensitively.
    return lambda record: any(fnmatchcase(v, p) for v in values(record) for p in patterns)
