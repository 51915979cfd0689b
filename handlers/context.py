"""Each Slack payload read once, by middleware, into an `Interaction`: who acted, on which
request, from where (a channel message, App Home, a modal, a command) and where to answer.
Listeners read it from the context instead of picking the payload apart themselves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from slack_bolt import BoltContext

INTERACTION = "interaction"  # the context key


class Surface(StrEnum):
    """Where something happened in Slack."""

    COMMAND = "command"  # a slash command
    MESSAGE = "message"  # a button in a message (has a response_url)
    HOME = "home"  # a button in App Home (no response_url)
    MODAL = "modal"  # a modal: submitted, or a button in it
    EVENT = "event"  # an Events API event


@dataclass(frozen=True)
class Interaction:
    user: str
    surface: Surface
    # What a button carries (read it typed with Conversation.subject), or what the modal
    # opened from one was given in its metadata.
    subject: str | None = None
    response_url: str | None = None  # where to answer; for a modal, its opener's
    trigger_id: str | None = None  # to open a modal
    channel: str | None = None
    message_ts: str | None = None  # the message a button was clicked on
    opened_from: Surface | None = None  # a modal's: where it was opened
    values: tuple[tuple[str, str | None], ...] = ()  # a submitted modal's inputs
    # The HTTP request's signature (None over Socket Mode): seen again, it is a replay.
    delivery: str | None = None
    ephemeral: bool = False  # clicked on a message only the clicker sees (a list, a reply)

    @property
    def from_home(self) -> bool:
        """Done in App Home, or in a modal opened there: the Home view needs refreshing."""
        return Surface.HOME in (self.surface, self.opened_from)

    def value(self, block_id: str) -> str | None:
        """A submitted modal's input, by block id."""
        return dict(self.values).get(block_id)

    def modal_metadata(
        self, subject: str | None = None, *, keep_response_url: bool = True
    ) -> dict[str, str]:
        """What a modal opened from here carries, so its submission knows what it is
        about and where it came from (`parse` reads it back). Without
        `keep_response_url` its answers go by DM."""
        return {
            "request": subject or "",
            "response_url": (self.response_url or "") if keep_response_url else "",
            "channel": self.channel or "",
            "opened_from": self.surface.value,
        }


def interaction(context: BoltContext) -> Interaction:
    found = context.get(INTERACTION)
    if not isinstance(found, Interaction):
        raise LookupError("no interaction on the context: is the middleware registered?")
    return found


def parse(body: dict[str, Any], delivery: str | None = None) -> Interaction | None:
    """The interaction in a Slack request body; None when there is nobody to answer."""
    if "command" in body:
        return Interaction(
            user=body["user_id"],
            surface=Surface.COMMAND,
            response_url=body.get("response_url") or None,
            trigger_id=body.get("trigger_id"),
            channel=body.get("channel_id"),
            delivery=delivery,
        )
    kind = body.get("type")
    if kind == "block_actions":
        return _button(body)
    if kind == "view_submission":
        return _submission(body)
    if kind == "event_callback":
        user = body.get("event", {}).get("user")
        return Interaction(user=user, surface=Surface.EVENT) if isinstance(user, str) else None
    return None


def _button(body: dict[str, Any]) -> Interaction:
    actions = body.get("actions") or [{}]
    value = actions[0].get("value")
    return Interaction(
        user=body["user"]["id"],
        surface=_button_surface(body),
        subject=str(value) if value is not None else None,
        response_url=body.get("response_url") or None,
        trigger_id=body.get("trigger_id"),
        channel=(body.get("channel") or {}).get("id"),
        message_ts=(body.get("container") or {}).get("message_ts"),
        ephemeral=(body.get("container") or {}).get("is_ephemeral") is True,
    )


def _button_surface(body: dict[str, Any]) -> Surface:
    # A key present with null (as a fuzzed payload may send) reads as absent.
    if (body.get("container") or {}).get("type") != "view":
        return Surface.MESSAGE
    return Surface.HOME if (body.get("view") or {}).get("type") == "home" else Surface.MODAL


def _submission(body: dict[str, Any]) -> Interaction:
    view = body.get("view", {})
    metadata = _metadata(view)
    opened_from = metadata.get("opened_from")
    if opened_from is None and metadata.get("from_home") == "true":
        opened_from = Surface.HOME.value  # a reject form opened before "opened_from" existed
    return Interaction(
        user=body["user"]["id"],
        surface=Surface.MODAL,
        subject=metadata.get("request") or None,
        response_url=metadata.get("response_url") or None,
        channel=metadata.get("channel") or None,
        opened_from=Surface(opened_from) if opened_from in set(Surface) else None,
        values=tuple(view_values(view).items()),
    )


def _metadata(view: dict[str, Any]) -> dict[str, str]:
    """A view's private_metadata (JSON object of strings); empty when unreadable."""
    try:
        data = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def view_values(view: dict[str, Any]) -> dict[str, str | None]:
    """The submitted value of each input block, by block id, as text."""
    values: dict[str, str | None] = {}
    for block_id, elements in view.get("state", {}).get("values", {}).items():
        for element in elements.values():
            values[block_id] = _element_value(element)
    return values


def _element_value(element: dict[str, Any]) -> str | None:
    kind = element.get("type")
    if kind == "static_select":
        selected = element.get("selected_option")
        return selected["value"] if selected else None
    if kind == "checkboxes":
        return ",".join(o["value"] for o in element.get("selected_options") or [])
    if kind == "datepicker":
        return element.get("selected_date")
    if kind == "timepicker":
        return element.get("selected_time")
    return element.get("value")
