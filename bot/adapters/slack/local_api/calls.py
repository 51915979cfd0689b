"""What the local Slack API records of each call, and reading a call's blocks and view."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

RESPONSE_URL_METHOD = "response_url"
UPLOAD_METHOD = "upload"  # the POST of a file's bytes to its upload URL
# Calls carrying a message (text and blocks) or a view: checked as Slack checks them.
MESSAGE_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "chat.scheduleMessage",
        RESPONSE_URL_METHOD,
    }
)
VIEW_METHODS = frozenset({"views.open", "views.push", "views.update", "views.publish"})


def decoded(raw: Any, empty: Any) -> Any:
    """Form-encoded calls carry blocks and views as JSON strings, JSON calls as objects."""
    if not raw:
        return empty
    return json.loads(raw) if isinstance(raw, str) else raw


def blocks_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of a call's arguments (a message or a response_url post)."""
    return list(decoded(args.get("blocks"), []))


def view_of(args: dict[str, Any]) -> dict[str, Any]:
    return dict(decoded(args.get("view"), {}))


@dataclass
class Call:
    method: str  # Web API method, or "response_url"
    args: dict[str, Any]
    status: int
    token: str | None = None  # the response_url token
    answer: dict[str, Any] = field(default_factory=dict)  # what the bot was told back

    def blocks(self) -> list[dict[str, Any]]:
        return blocks_of(self.args)

    def view(self) -> dict[str, Any]:
        return view_of(self.args)

    def text_of_blocks(self) -> str:
        return json.dumps(self.blocks())


@dataclass
class UploadedFile:
    id: str
    name: str
    length: int  # as announced to files.getUploadURLExternal
    data: bytes | None = None  # once POSTed to the upload URL
    title: str | None = None
    channel: str | None = None  # once shared by files.completeUploadExternal
    thread_ts: str | None = None


@dataclass
class Fault:
    status: int
    times: int
    retry_after: int | None = None
    after_effect: bool = False  # the call takes effect, then the error is answered
    error: str | None = None  # Slack's error code (a refusal is answered 200, ok: false)


def dm_channel(channel: str) -> str:
    """A user id stands for the DM channel with that user."""
    return "D" + channel[1:] if channel.startswith(("U", "W")) else channel
