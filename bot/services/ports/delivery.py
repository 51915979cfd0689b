"""Messages sent once: where each delivery stands, and the Slack calls that send or find one.

A delivery key is recorded (as `pending`) before the Slack call and carried in the
message's metadata; after an uncertain outcome (a crash, a timeout, a 5xx) the
conversation is searched for the key before posting again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from bot.domain.records import SlackMessage


class DeliveryState(StrEnum):
    PENDING = "pending"  # a post may be under way, or may have happened: look before posting
    SENT = "sent"  # posted: never again
    NOT_SENT = "not-sent"  # Slack said no (429, refused): post again without looking


@dataclass(frozen=True)
class DeliveryRecord:
    state: DeliveryState
    channel: str
    at: datetime  # when this state was recorded
    ts: str | None = None  # the message, once known


@dataclass(frozen=True)
class DeliveryStart:
    """What `begin_delivery` found: "go" (slot reserved, key marked pending), "sent",
    "pending" (with the record), or "wait" (`wait_s` until the channel's next slot)."""

    verdict: str
    record: DeliveryRecord | None = None
    wait_s: float = 0.0


class DeliveryLog(Protocol):
    def begin_delivery(
        self,
        key: str,
        channel: str,
        now: datetime,
        interval_s: float,
        looked: bool,
        pace: str | None = None,
    ) -> DeliveryStart:
        """In one step: the key's state; else the channel's pace; else mark it pending.
        `looked`: an uncertain earlier post was searched for and not found. `pace`: the
        name the pace is kept under (default: the channel)."""
        ...

    def delivery(self, key: str) -> DeliveryRecord | None: ...

    def record_delivery(self, key: str, record: DeliveryRecord) -> None: ...


class RateLimited(Exception):
    """Slack answered 429: nothing was posted; try again after `retry_after` seconds."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(f"rate limited; retry after {retry_after:g} s")


class Uncertain(Exception):
    """The call may or may not have posted (timeout, connection reset, 5xx)."""


class Refused(Exception):
    """Slack said no. `lasting`: the refusal is about this message or its channel
    (channel_not_found, is_archived, invalid_blocks, ...) and posting it again cannot
    help; otherwise it is about the app's own setup (a token, a scope) and may be mended."""

    def __init__(self, error: str, lasting: bool = False) -> None:
        self.error = error
        self.lasting = lasting
        super().__init__(error)


class Poster(Protocol):
    """The Slack side: post with the key in metadata, or find the post by its key."""

    def post(
        self,
        channel: str,
        text: str,
        blocks: list[dict[str, Any]],
        key: str,
        thread_ts: str | None = None,
    ) -> SlackMessage:
        """Post to `channel`, in the thread of `thread_ts` when given."""
        ...

    def update(self, message: SlackMessage, text: str, blocks: list[dict[str, Any]]) -> None:
        """Replace a posted message (an approval card once decided)."""
        ...

    def find(
        self, channel: str, key: str, since: datetime, thread_ts: str | None = None
    ) -> SlackMessage | None:
        """The message carrying `key` posted to `channel` (a user id means the DM with
        them; `thread_ts`: in that thread) at or after `since`, or None."""
        ...


@dataclass(frozen=True)
class FileToShare:
    """A file for a thread: `filename` is unique per delivery, so it is how a share whose
    outcome is unknown is found again (files carry no message metadata)."""

    filename: str
    title: str
    content: bytes


class FileSharer(Protocol):
    """The Slack side of sharing a file into a thread (upload, then share), and finding
    it there again."""

    def share(self, channel: str, thread_ts: str, file: FileToShare) -> None: ...

    def find_shared(self, channel: str, thread_ts: str, filename: str) -> SlackMessage | None:
        """The message in the thread of `thread_ts` that carries a file named `filename`."""
        ...
