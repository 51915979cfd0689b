"""Answering the person behind one Slack request, and running work after its ack.

Every listener acks first (Slack waits 3 seconds at most) and hands anything slow to
`after_ack`; what happens then is said through one `Conversation`: in the channel where
they acted (ephemerally, at the response_url), else by direct message (App Home has no
response_url). A failure after the ack is logged and told to them, never left hanging.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from slack_bolt import Ack, BoltContext

from bot.after_ack import AfterAck
from bot.blocks.text import esc
from bot.blocks.values import ButtonValue, MalformedValue, decode
from bot.services.actor import Actor
from bot.services.replies import Replies
from handlers.context import Interaction, Surface

CONVERSATION = "conversation"  # the context key
V = TypeVar("V", bound=ButtonValue)
SORRY = (
    ":x: That did not go through: gpu-bot hit an error (the details are in its log). "
    "Try again in a minute; `/gpu status` shows where your requests are."
)


class Conversation:
    def __init__(
        self, interaction: Interaction, actor: Actor, replies: Replies, after_ack: AfterAck
    ) -> None:
        self.interaction = interaction
        self.actor = actor  # who acted, for the services to decide with
        self._replies = replies
        self._after_ack = after_ack

    def subject(self, kind: type[V]) -> V | None:
        """What the button (or the modal opened from it) carries, as a `kind`; None
        after telling them it is malformed."""
        try:
            return decode(kind, self.interaction.subject or "")
        except MalformedValue as exc:
            self.refuse(str(exc))
            return None

    def say(self, text: str) -> None:
        """A message beside what they acted on (which stays as it is)."""
        incoming = self.interaction
        self._replies.reply(incoming.user, incoming.response_url, text, replace=False)

    def refuse(self, text: str) -> None:
        """Why nothing changed; `text` may hold user input (it is escaped)."""
        self.say(f":warning: {esc(text)}")

    def sorry(self, _exc: Exception | None = None) -> None:
        """The answer to a failure after the ack."""
        self.say(SORRY)

    def show(self, text: str, blocks: list[dict[str, Any]] | None = None) -> None:
        """The result of what they asked: in place of the message they clicked or the
        form's opener, or as a new answer to a command."""
        incoming = self.interaction
        replace = incoming.surface is not Surface.COMMAND
        self._replies.reply(incoming.user, incoming.response_url, text, blocks, replace=replace)

    def later(self, work: Callable[..., object], *args: Any, tell_failure: bool = True) -> None:
        """Run `work(*args)` after the ack; a failure is logged and, with
        `tell_failure`, told to the person."""
        on_error = self.sorry if tell_failure else None
        self._after_ack.run(work, *args, on_error=on_error)


def conversation(context: BoltContext) -> Conversation:
    found = context.get(CONVERSATION)
    if not isinstance(found, Conversation):
        raise LookupError("no conversation on the context: is the middleware registered?")
    return found


def after_ack(ack: Ack, context: BoltContext, work: Callable[..., object], *args: Any) -> None:
    """Ack now, then run `work(conversation, *args)`: the one shape of a listener whose
    work is slow (Slack, AWS or Redis calls)."""
    ack()
    talk = conversation(context)
    talk.later(work, talk, *args)
