"""AWS's wire formats, both ways, for the protocols the market answers: the HTTP request
botocore serialised is read back into parameters by the operation's input shape, and the
market's answer is written as AWS would send it (EC2 and query XML, JSON 1.0/1.1), for
botocore's own parser to read.

Written from botocore's serializers and parsers (botocore/serialize.py, parsers.py) and
AWS's protocol pages (EC2 query API, AWS query protocol, AWS JSON protocol).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from botocore.model import ListShape, MapShape, OperationModel, Shape, StructureShape
from botocore.utils import parse_to_aware_datetime

EC2_NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"


# --- requests ----------------------------------------------------------------------------


def request_params(operation: OperationModel, body: bytes | str | None) -> dict[str, Any]:
    """The parameters of a request as sent, typed by the operation's input shape."""
    shape = operation.input_shape
    text = body.decode("utf-8") if isinstance(body, bytes) else (body or "")
    if shape is None:
        return {}
    protocol = operation.service_model.resolved_protocol
    if protocol in ("ec2", "query"):
        flat = dict(parse_qsl(text, keep_blank_values=True))
        return _query_structure(shape, flat, "", ec2=protocol == "ec2")
    if protocol == "json":
        loaded = json.loads(text) if text else {}
        value = _json_value(shape, loaded)
        return value if isinstance(value, dict) else {}
    raise ValueError(f"the sandbox does not read the {protocol} protocol")


def _query_name(shape: Shape, default: str, ec2: bool) -> str:
    if ec2:
        if "queryName" in shape.serialization:
            return str(shape.serialization["queryName"])
        name = shape.serialization.get("name")
        return str(name[0].upper() + name[1:]) if name else default
    return str(shape.serialization.get("name", default))


def _query_structure(
    shape: StructureShape, flat: Mapping[str, str], prefix: str, ec2: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, member in shape.members.items():
        key = _query_name(member, name, ec2)
        key = f"{prefix}.{key}" if prefix else key
        if _present(flat, key):
            out[name] = _query_value(member, flat, key, ec2)
    return out


def _present(flat: Mapping[str, str], key: str) -> bool:
    return key in flat or any(k.startswith(key + ".") for k in flat)


def _query_value(shape: Shape, flat: Mapping[str, str], key: str, ec2: bool) -> Any:
    if isinstance(shape, StructureShape):
        return _query_structure(shape, flat, key, ec2)
    if isinstance(shape, ListShape):
        # EC2 lists are always `Name.N`; query lists `Name.member.N` unless flattened.
        base = key if ec2 or shape.serialization.get("flattened") else f"{key}.member"
        items, index = [], 1
        while _present(flat, f"{base}.{index}"):
            items.append(_query_value(shape.member, flat, f"{base}.{index}", ec2))
            index += 1
        return items
    if isinstance(shape, MapShape):
        base = key if shape.serialization.get("flattened") else f"{key}.entry"
        found, index = {}, 1
        while _present(flat, f"{base}.{index}"):
            entry = f"{base}.{index}"
            k = flat.get(f"{entry}.{shape.key.serialization.get('name', 'key')}", "")
            found[k] = _query_value(
                shape.value, flat, f"{entry}.{shape.value.serialization.get('name', 'value')}", ec2
            )
            index += 1
        return found
    return _scalar(shape, flat.get(key, ""))


def _scalar(shape: Shape, text: str) -> Any:
    kind = shape.type_name
    if kind in ("integer", "long"):
        return int(text)
    if kind in ("float", "double"):
        return float(text)
    if kind == "boolean":
        return text == "true"
    if kind == "timestamp":
        return parse_to_aware_datetime(text).astimezone(UTC)
    if kind == "blob":
        return base64.b64decode(text)
    return text


def _json_value(shape: Shape, value: Any) -> Any:
    if isinstance(shape, StructureShape) and isinstance(value, dict):
        return {
            name: _json_value(shape.members[name], item)
            for name, item in value.items()
            if name in shape.members
        }
    if isinstance(shape, ListShape) and isinstance(value, list):
        return [_json_value(shape.member, item) for item in value]
    if isinstance(shape, MapShape) and isinstance(value, dict):
        return {k: _json_value(shape.value, v) for k, v in value.items()}
    if shape.type_name == "timestamp" and value is not None:
        return parse_to_aware_datetime(value).astimezone(UTC)
    if shape.type_name == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    return value


# --- responses ---------------------------------------------------------------------------


def response_body(operation: OperationModel, result: Mapping[str, Any], request_id: str) -> str:
    protocol = operation.service_model.resolved_protocol
    shape = operation.output_shape
    if protocol in ("ec2", "query"):
        ec2 = protocol == "ec2"
        inner = "" if shape is None else _xml_members(shape, result, ec2)
        root = f"{operation.name}Response"
        if ec2:
            return (
                f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{EC2_NAMESPACE}">'
                f"<requestId>{request_id}</requestId>{inner}</{root}>"
            )
        wrapper = shape.serialization.get("resultWrapper") if shape is not None else None
        if wrapper:
            inner = f"<{wrapper}>{inner}</{wrapper}>"
        metadata = f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata>"
        return f"<{root}>{inner}{metadata}</{root}>"
    if protocol == "json":
        return json.dumps({} if shape is None else _json_out(shape, result))
    raise ValueError(f"the sandbox does not write the {protocol} protocol")


def error_body(protocol: str, code: str, message: str, request_id: str) -> str:
    text, words = escape(code), escape(message)
    if protocol == "ec2":
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
            f"<Code>{text}</Code><Message>{words}</Message></Error></Errors>"
            f"<RequestID>{request_id}</RequestID></Response>"
        )
    if protocol == "query":
        return (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{text}</Code>"
            f"<Message>{words}</Message></Error><RequestId>{request_id}</RequestId>"
            "</ErrorResponse>"
        )
    return json.dumps({"__type": code, "message": message})


def content_type(protocol: str, json_version: str | None) -> str:
    if protocol == "json":
        return f"application/x-amz-json-{json_version or '1.1'}"
    return "text/xml;charset=UTF-8"


def _xml_members(shape: StructureShape, value: Mapping[str, Any], ec2: bool) -> str:
    parts = []
    for name, member in shape.members.items():
        if name in value and value[name] is not None:
            parts.append(_xml(member, value[name], member.serialization.get("name", name), ec2))
    return "".join(parts)


def _xml(shape: Shape, value: Any, tag: str, ec2: bool) -> str:
    if isinstance(shape, StructureShape):
        return f"<{tag}>{_xml_members(shape, value, ec2)}</{tag}>"
    if isinstance(shape, ListShape):
        item_tag = shape.member.serialization.get("name", "item" if ec2 else "member")
        if shape.serialization.get("flattened"):
            return "".join(_xml(shape.member, v, item_tag, ec2) for v in value)
        items = "".join(_xml(shape.member, v, item_tag, ec2) for v in value)
        return f"<{tag}>{items}</{tag}>"
    if isinstance(shape, MapShape):
        key_tag = shape.key.serialization.get("name", "key")
        value_tag = shape.value.serialization.get("name", "value")
        entries = "".join(
            f"<entry><{key_tag}>{escape(str(k))}</{key_tag}>"
            f"{_xml(shape.value, v, value_tag, ec2)}</entry>"
            for k, v in value.items()
        )
        return f"<{tag}>{entries}</{tag}>"
    return f"<{tag}>{escape(_xml_scalar(shape, value))}</{tag}>"


def _xml_scalar(shape: Shape, value: Any) -> str:
    kind = shape.type_name
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "timestamp":
        moment = _aware(value)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if kind == "blob":
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _json_out(shape: Shape, value: Any) -> Any:
    if isinstance(shape, StructureShape):
        return {
            name: _json_out(shape.members[name], item)
            for name, item in value.items()
            if name in shape.members and item is not None
        }
    if isinstance(shape, ListShape):
        return [_json_out(shape.member, item) for item in value]
    if isinstance(shape, MapShape):
        return {str(k): _json_out(shape.value, v) for k, v in value.items()}
    if shape.type_name == "timestamp":
        # JSON services send epoch seconds (botocore reads them in the host's zone).
        return _aware(value).timestamp()
    if shape.type_name == "blob":
        return base64.b64encode(value).decode("ascii")
    return value


def _aware(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else parse_to_aware_datetime(value)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
