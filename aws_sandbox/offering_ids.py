"""Self-describing offering ids.

AWS remembers its offerings; the sandbox may quote in one process and buy in another, so
the id carries the offering itself (compact JSON, base32 in lower case, which fits
SageMaker's `[a-z0-9\\-]+`) behind a checksum that turns a garbled id into a refusal.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

_CHECKSUM_BYTES = 4


class BadOfferingId(ValueError):
    """An offering id the sandbox did not mint (garbled, truncated, of another kind)."""


def pack(prefix: str, payload: list[Any]) -> str:
    body = json.dumps(payload, separators=(",", ":")).encode()
    raw = _checksum(body) + body
    return prefix + base64.b32encode(raw).decode("ascii").rstrip("=").lower()


def unpack(prefix: str, offering_id: str) -> list[Any]:
    """The payload `pack` was given; BadOfferingId for anything `pack` did not make."""
    if not offering_id.startswith(prefix):
        raise BadOfferingId(f"does not start with {prefix}")
    text = offering_id.removeprefix(prefix).upper()
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError) as exc:
        raise BadOfferingId("not base32") from exc
    checksum, body = raw[:_CHECKSUM_BYTES], raw[_CHECKSUM_BYTES:]
    if checksum != _checksum(body):
        raise BadOfferingId("checksum mismatch")
    payload = json.loads(body)
    if not isinstance(payload, list):
        raise BadOfferingId("not an offering")
    return payload


def _checksum(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()[:_CHECKSUM_BYTES]
