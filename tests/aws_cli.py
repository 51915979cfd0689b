"""Run an `aws ec2 ...` line, as a message shows it, through a boto3 client: the way a
person pastes it. Options map to the operation's members by botocore's own naming
(`--tag-specifications` is `TagSpecifications`), values in the CLI's shorthand syntax
(`Key=a,Tags=[{Key=b,Value=c}]`) become structures and lists, and `--count N` is the
CLI's MinCount = MaxCount = N. Placeholders such as `<ami-id>` are filled by the caller.
The client then validates every parameter against the service model, so an option the
line misspells fails here as it would in the CLI."""

from __future__ import annotations

import shlex
from typing import Any

from botocore import xform_name

Value = str | list["Value"] | dict[str, "Value"]


def cli_params(line: str, client: Any, fill: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(operation name in Python form, keyword arguments) for the line's `aws` call."""
    for placeholder, value in fill.items():
        line = line.replace(placeholder, value)
    words = shlex.split(line)
    if words[:2] != ["aws", client.meta.service_model.service_name]:
        raise ValueError(f"not an aws {client.meta.service_model.service_name} line: {line}")
    method = xform_name(words[2].replace("-", "_"))
    op = client.meta.service_model.operation_model(
        {xform_name(n): n for n in client.meta.service_model.operation_names}[method]
    )
    members = {"--" + xform_name(name, "-"): name for name in op.input_shape.members}
    params: dict[str, Any] = {}
    args = iter(words[3:])
    for option in args:
        value = next(args)
        if option == "--region":
            if value != client.meta.region_name:
                raise ValueError(
                    f"the line is for {value}, the client for {client.meta.region_name}"
                )
            continue
        if option == "--count":  # the CLI's own option for RunInstances
            params["MinCount"] = params["MaxCount"] = int(value)
            continue
        name = members[option]
        shape = op.input_shape.members[name]
        parsed = _shorthand(value) if shape.type_name in ("structure", "list") else value
        if shape.type_name == "list" and isinstance(parsed, dict):
            parsed = [parsed]  # one item given without brackets
        params[name] = _typed(parsed, shape)
    return method, params


def _typed(value: Value, shape: Any) -> Any:
    if shape.type_name == "structure":
        assert isinstance(value, dict), value
        return {k: _typed(v, shape.members[k]) for k, v in value.items()}
    if shape.type_name == "list":
        assert isinstance(value, list), value
        return [_typed(v, shape.member) for v in value]
    if shape.type_name in ("integer", "long"):
        return int(str(value))
    if shape.type_name == "boolean":
        return str(value).lower() == "true"
    return value


def _shorthand(text: str) -> Value:
    value, rest = _struct_body(text, 0, end="")
    if rest != len(text):
        raise ValueError(f"unparsed shorthand after {text[:rest]!r}")
    return value


def _struct_body(text: str, i: int, end: str) -> tuple[dict[str, Value], int]:
    out: dict[str, Value] = {}
    while i < len(text) and text[i] != end:
        eq = text.index("=", i)
        key = text[i:eq]
        value, i = _value(text, eq + 1)
        out[key] = value
        if i < len(text) and text[i] == ",":
            i += 1
    return out, i


def _value(text: str, i: int) -> tuple[Value, int]:
    if text[i] == "{":
        body, i = _struct_body(text, i + 1, "}")
        return body, i + 1
    if text[i] == "[":
        items: list[Value] = []
        i += 1
        while text[i] != "]":
            item, i = _value(text, i)
            items.append(item)
            if text[i] == ",":
                i += 1
        return items, i + 1
    j = i
    while j < len(text) and text[j] not in ",}]":
        j += 1
    return text[i:j], j
