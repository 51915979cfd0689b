"""What a button carries in its `value`, and a modal opened from it in its metadata:
typed, written by the builders (`str(value)`) and read back by the listeners with the
one parser here (`decode`).

The text forms are the ones already on messages in Slack (`R12`, `R12|48`, `D3`), so a
button posted before an upgrade still works after it. A value that does not parse is
refused with what was expected: it was edited, or is from a bot that no longer exists."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Self, TypeVar

REQUEST_ID = re.compile(r"R[0-9]{1,12}")
DEPLOYMENT_ID = re.compile(r"D[0-9]{1,12}")
WATCH_ID = re.compile(r"W[0-9]{1,12}")
COUNT = re.compile(r"[0-9]{1,6}")  # ASCII digits only: str.isdigit() also takes "²"
MOST_HOURS = 182 * 24  # the longest an extension of a reservation can add
MOST_EXTENSIONS = 9999


class MalformedValue(ValueError):
    """The value is not the kind the button is meant to carry; the message says so."""


class ButtonValue:
    expected: ClassVar[str]  # said when a value does not parse

    @classmethod
    def parse(cls, text: str) -> Self:
        raise NotImplementedError

    @classmethod
    def malformed(cls, text: str) -> MalformedValue:
        shown = text if len(text) <= 40 else text[:40] + "…"
        return MalformedValue(
            f"That button is malformed: it carries “{shown}” where {cls.expected} belongs."
        )


V = TypeVar("V", bound=ButtonValue)


def decode(kind: type[V], text: str) -> V:
    """`text` read as a `kind`; MalformedValue says what was expected."""
    return kind.parse(text)


@dataclass(frozen=True)
class RequestRef(ButtonValue):
    """A button about a request: Approve, Reject, Cancel, Check again, Clean up now..."""

    expected: ClassVar[str] = "a request id such as R12"
    request_id: str

    def __str__(self) -> str:
        return self.request_id

    @classmethod
    def parse(cls, text: str) -> Self:
        if not REQUEST_ID.fullmatch(text):
            raise cls.malformed(text)
        return cls(text)


@dataclass(frozen=True)
class DeploymentRef(ButtonValue):
    """Clean up on a deployment's message."""

    expected: ClassVar[str] = "a deployment id such as D3"
    deployment_id: str

    def __str__(self) -> str:
        return self.deployment_id

    @classmethod
    def parse(cls, text: str) -> Self:
        if not DEPLOYMENT_ID.fullmatch(text):
            raise cls.malformed(text)
        return cls(text)


def _request_and_count(cls: type[ButtonValue], text: str, most: int) -> tuple[str, int]:
    """`R12|48`: a request id, a bar and a whole number from 1 to `most`."""
    head, bar, tail = text.partition("|")
    ok = bar and REQUEST_ID.fullmatch(head) and COUNT.fullmatch(tail)
    if not ok or not 1 <= int(tail) <= most:
        raise cls.malformed(text)
    return head, int(tail)


@dataclass(frozen=True)
class ExtendAsk(ButtonValue):
    """The Extend button: extend `request_id` by `hours`."""

    expected: ClassVar[str] = "a request id and hours, such as R12|48"
    request_id: str
    hours: int

    def __str__(self) -> str:
        return f"{self.request_id}|{self.hours}"

    @classmethod
    def parse(cls, text: str) -> Self:
        return cls(*_request_and_count(cls, text, MOST_HOURS))


@dataclass(frozen=True)
class ExtensionRef(ButtonValue):
    """Approve or Reject on an extension card: extension `number` of `request_id`."""

    expected: ClassVar[str] = "a request id and an extension number, such as R12|2"
    request_id: str
    number: int

    def __str__(self) -> str:
        return f"{self.request_id}|{self.number}"

    @classmethod
    def parse(cls, text: str) -> Self:
        return cls(*_request_and_count(cls, text, MOST_EXTENSIONS))


@dataclass(frozen=True)
class WatchRef(ButtonValue):
    """Stop on a watch (App Home, `/gpu watches`)."""

    expected: ClassVar[str] = "a watch id such as W3"
    watch_id: str

    def __str__(self) -> str:
        return self.watch_id

    @classmethod
    def parse(cls, text: str) -> Self:
        if not WATCH_ID.fullmatch(text):
            raise cls.malformed(text)
        return cls(text)


@dataclass(frozen=True)
class WatchAskRef(ButtonValue):
    """The Watch button beside a quote's outlook line: the request, as `/gpu watch` takes
    it (checked again as typed text when pressed)."""

    expected: ClassVar[str] = "a request such as 8x p5.48xlarge 3d from 2026-12-14"
    text: str

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str) -> Self:
        if not text.strip() or len(text) > 1000:
            raise cls.malformed(text)
        return cls(text)
