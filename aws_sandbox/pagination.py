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


def same_page_again(params: Mapping[str, Any], bad_token: Callable[[str], SandboxError]) -> str:
    """A token for the page `params` asked for, for an answer that held none of it. Each
    differs from the one sent (a paginator refuses the same token twice)."""
    fingerprint = _fingerprint(params)
    token = params.get("NextToken")
    offset = _offset(token, fingerprint) if token else 0
    if offset is None:
        raise bad_token(str(token))
    return _token(offset, fingerprint, retry=_retry(str(token or "")) + 1)


def _fingerprint(params: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in params.items() if k not in ("NextToken", "MaxResults")}
    text = json.dumps(rest, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _token(offset: int, fingerprint: str, retry: int = 0) -> str:
    text = f"{offset}:{fingerprint}" + (f":{retry}" if retry else "")
    return base64.urlsafe_b64encode(text.encode()).decode("ascii")


def _parts(token: str) -> list[str]:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode().split(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return []


def _offset(token: str, fingerprint: str) -> int | None:
    parts = _parts(token)
    try:
        offset = int(parts[0])
    except (IndexError, ValueError):
        return None
    return offset if len(parts) >= 2 and parts[1] == fingerprint and offset >= 0 else None


def _retry(token: str) -> int:
    parts = _parts(token)
    return int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 0
