"""NextToken/MaxResults paging over a computed list.

The token carries the offset and a fingerprint of the other parameters, so it needs no
server-side state and a token from a different search is refused, as AWS refuses it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from aws_sandbox.errors import SandboxError

T = TypeVar("T")


def paginate(
    items: Sequence[T],
    params: Mapping[str, Any],
    bad_token: Callable[[str], SandboxError],
    default_page: int,
) -> tuple[list[T], str | None]:
    """The page `params` asks for, and the token for the next one (None after the last)."""
    fingerprint = _fingerprint(params)
    token = params.get("NextToken")
    offset = _offset(token, fingerprint) if token else 0
    if offset is None:
        raise bad_token(str(token))
    end = offset + int(params.get("MaxResults") or default_page)
    following = _token(end, fingerprint) if end < len(items) else None
    return list(items[offset:end]), following


def _fingerprint(params: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in params.items() if k not in ("NextToken", "MaxResults")}
    text = json.dumps(rest, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _token(offset: int, fingerprint: str) -> str:
    return base64.urlsafe_b64encode(f"{offset}:{fingerprint}".encode()).decode("ascii")


def _offset(token: str, fingerprint: str) -> int | None:
    try:
        offset, _, mark = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        return int(offset) if mark == fingerprint and int(offset) >= 0 else None
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
