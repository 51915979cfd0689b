"""What the people in the shell's workspace see: messages in channels, DMs and ephemeral
replies, App Home views and modals, built from the app's acks and the Web API and
response_url calls it made. Each batch of output numbers its buttons from 1; `press N`
takes the latest output's numbering (none when it showed no buttons), and only while that
button is still on its message; `reshow` shows a message again to press its buttons.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from bot.adapters.slack.local_api import RESPONSE_URL_METHOD, Call, blocks_of
from bot.shell.mrkdwn import Names
from bot.shell.people import People
from bot.shell.render import Button, Renderer, Rendering
from bot.shell.style import Style

if TYPE_CHECKING:
    from bot.shell.console_api import Ack

Block = dict[str, Any]
View = dict[str, Any]


class Audience(Enum):
    CHANNEL = "channel"
    DM = "dm"
    EPHEMERAL = "ephemeral"


@dataclass
class Message:
    number: int
    channel: str
    ts: str
    audience: Audience
    user: str | None  # who alone sees a DM or an ephemeral message
    text: str
    blocks: list[Block]

    def as_sent(self) -> dict[str, Any]:
        """The message as Slack includes it in a click on it."""
        return {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks}


@dataclass
class ResponseTarget:
    """Where a response_url's messages go: `message` is the one replace_original
    replaces (the clicked message, or the first reply to a command)."""

    user: str
    channel: str
    message: Message | None = None


@dataclass(frozen=True)
class Pressable:
    button: Button
    message: Message | None  # the message it is on, or
    home: View | None  # the App Home view it is on
    user: str | None  # who alone can see it


@dataclass(frozen=True)
class OpenedModal:
    user: str
    view: View


class Unpressable(Exception):
    """Why a button cannot be pressed by this user now."""


class Screen:
    def __init__(self, people: People, style: Style, channels: dict[str, str]) -> None:
        self.people = people
        self.style = style
        self.channels = channels  # channel id -> name
        self.messages: dict[tuple[str, str], Message] = {}  # (channel, ts) -> message
        self.homes: dict[str, View] = {}  # user -> the Home view published for them
        self.buttons: list[Pressable] = []  # the latest numbering
        self.opened: list[OpenedModal] = []  # modals to fill in, in order
        self._responses: dict[str, ResponseTarget] = {}
        self._triggers: dict[str, str] = {}
        self._numbers = 0
        self._reply_ts = 0
        self._lines: list[str] = []
        self._batch: list[Pressable] = []

    # --- what the session tells the screen --------------------------------------------

    def expect_trigger(self, trigger_id: str, user: str) -> None:
        """A modal opened with this trigger is shown to `user`."""
        self._triggers[trigger_id] = user

    def expect_responses(self, token: str, target: ResponseTarget) -> None:
        self._responses[token] = target

    def show(self, calls: list[Call], ack: tuple[str, Ack] | None = None) -> str:
        """Text for one batch: the ack of a command (token, answer), then every call."""
        self._lines, self._batch = [], []
        if ack is not None:
            self._acked(*ack)
        for call in calls:
            if call.status == 200:
                self._call(call)
        if self._lines:
            # `press N` means the output just shown, even when it has no buttons: never a
            # button of an older message the person has stopped looking at.
            self.buttons = self._batch
        return "\n".join(self._lines)

    def reshow(self, number: int, user: str) -> str:
        """Message `number` again, as it is now, its buttons the ones `press N` clicks;
        `Unpressable` when there is no such message or `user` cannot see it."""
        found = [m for m in self.messages.values() if m.number == number]
        if not found:
            raise Unpressable(f"There is no message {number} (any more).")
        message = found[0]
        if message.user is not None and message.user != user:
            owner = self.people.name(message.user)
            raise Unpressable(f"Message {number} is one only {owner} can see: `as {owner}` first.")
        self._lines, self._batch = [], []
        rendering = self.renderer().message(message.blocks, message.text, 1)
        self._frame(f"{self._where(message)} · message {message.number}", rendering.lines)
        self._numbered(rendering, message=message, user=message.user)
        self.buttons = self._batch
        return "\n".join(self._lines)

    def pressable(self, number: int, user: str) -> Pressable:
        """Button `number` of the latest numbering, as it is now; `Unpressable` says why
        not (no such number, not visible to `user`, or no longer there)."""
        if not self.buttons:
            raise Unpressable(
                "The latest output has no buttons: `show N` shows message N again with its "
                "buttons, `home` opens App Home."
            )
        if not 1 <= number <= len(self.buttons):
            raise Unpressable(f"There is no button {number} (buttons: 1 to {len(self.buttons)}).")
        entry = self.buttons[number - 1]
        if entry.user is not None and entry.user != user:
            owner = self.people.name(entry.user)
            raise Unpressable(
                f"Button {number} is on something only {owner} can see: `as {owner}` first."
            )
        home = None
        if entry.message is not None:
            current = self.messages.get((entry.message.channel, entry.message.ts))
            blocks = current.blocks if current else []
        else:
            home = self.homes.get(entry.user or "", {})
            blocks = home.get("blocks", [])
        if not _has_button(blocks, entry.button):
            raise Unpressable(f"Button {number} ({entry.button.label}) is not there any more.")
        return Pressable(entry.button, entry.message, home, entry.user)

    def take_opened(self) -> list[OpenedModal]:
        opened, self.opened = self.opened, []
        return opened

    # --- acks and calls ---------------------------------------------------------------

    def _acked(self, token: str, ack: Ack) -> None:
        target = self._responses[token]
        if ack.body.get("text") or ack.body.get("blocks"):
            target.message = self._new_reply(target, ack.body)

    def _call(self, call: Call) -> None:
        method, args = call.method, call.args
        if method == "chat.postMessage":
            channel = str(args.get("channel", ""))
            dm = channel.startswith(("U", "W"))
            audience = Audience.DM if dm else Audience.CHANNEL
            self._post(
                str(call.answer["channel"]),
                str(call.answer["ts"]),
                audience,
                channel if dm else None,
                args,
            )
        elif method == "chat.postEphemeral":
            ts = str(call.answer["message_ts"])
            user = str(args.get("user", ""))
            self._post(str(args.get("channel", "")), ts, Audience.EPHEMERAL, user, args)
        elif method == "chat.update":
            message = self.messages.get((str(args.get("channel")), str(args.get("ts"))))
            if message is not None:
                self._replace(message, args)
        elif method == "chat.delete":
            message = self.messages.pop((str(args.get("channel")), str(args.get("ts"))), None)
            if message is not None:
                self._frame(f"{self._where(message)} · message {message.number} deleted", [])
        elif method == RESPONSE_URL_METHOD:
            self._responded(self._responses[str(call.token)], args)
        elif method == "views.open":
            user = self._triggers.get(str(args.get("trigger_id")), "")
            self._modal(user, dict(call.answer["view"]), "opened")
        elif method in ("views.publish", "views.update"):
            self._view(args, dict(call.answer["view"]))
        elif method == "files.completeUploadExternal" and call.answer.get("ok"):
            self._file(args, call.answer)

    def _file(self, args: dict[str, Any], answer: dict[str, Any]) -> None:
        """A file shared into a thread: its title, under the message it answers."""
        parent = self.messages.get((str(args.get("channel_id")), str(args.get("thread_ts"))))
        where = f"thread of message {parent.number}" if parent is not None else "a conversation"
        titles = [str(f.get("title") or f.get("id")) for f in answer.get("files") or []]
        self._frame(f"file in the {where}", [f"[image] {t}" for t in titles])

    def _post(
        self, channel: str, ts: str, audience: Audience, user: str | None, args: dict[str, Any]
    ) -> Message:
        self._numbers += 1
        message = Message(self._numbers, channel, ts, audience, user, "", [])
        self.messages[(channel, ts)] = message
        self._replace(message, args, new=True)
        return message

    def _replace(self, message: Message, args: dict[str, Any], new: bool = False) -> None:
        message.text = str(args.get("text") or "")
        message.blocks = blocks_of(args)
        state = "" if new else ", updated in place"
        rendering = self.renderer().message(message.blocks, message.text, self._next_number())
        self._frame(f"{self._where(message)} · message {message.number}{state}", rendering.lines)
        self._numbered(rendering, message=message, user=message.user)

    def _new_reply(self, target: ResponseTarget, args: dict[str, Any]) -> Message:
        self._reply_ts += 1
        ts = f"local.{self._reply_ts}"
        if args.get("response_type") == "in_channel":
            return self._post(target.channel, ts, Audience.CHANNEL, None, args)
        return self._post(target.channel, ts, Audience.EPHEMERAL, target.user, args)

    def _responded(self, target: ResponseTarget, args: dict[str, Any]) -> None:
        original = target.message
        if original is not None and _flag(args.get("delete_original")):
            self.messages.pop((original.channel, original.ts), None)
            self._frame(f"{self._where(original)} · message {original.number} deleted", [])
            target.message = None
        elif original is not None and _flag(args.get("replace_original")):
            self._replace(original, args)
        else:
            message = self._new_reply(target, args)
            target.message = target.message or message

    def _view(self, args: dict[str, Any], view: View) -> None:
        """views.publish (a Home tab) or views.update (a Home tab or an open modal)."""
        user = args.get("user_id") or next(
            (u for u, home in self.homes.items() if home.get("id") == view["id"]), None
        )
        if user is None or view.get("type") == "modal":
            self._modal("", view, "updated")
            return
        state = ", updated" if str(user) in self.homes else ""
        self.homes[str(user)] = view
        rendering = self.renderer().view(view, self._next_number())
        self._frame(f"App Home of @{self.people.name(str(user))}{state}", rendering.lines)
        self._numbered(rendering, home=view, user=str(user))

    def _modal(self, user: str, view: View, what: str) -> None:
        title = self.renderer().text(view.get("title"))
        to = f" for {self.people.name(user)}" if user else ""
        self._frame(f"modal {what}{to}: {title}", self.renderer().view(view, None).lines)
        if what == "opened":
            self.opened.append(OpenedModal(user, view))

    # --- drawing ----------------------------------------------------------------------

    def renderer(self) -> Renderer:
        return Renderer(self.style, Names(self.people.names(), self.channels))

    def _where(self, message: Message) -> str:
        if message.audience is Audience.DM and message.user:
            return f"DM to @{self.people.name(message.user)}"
        if message.audience is Audience.EPHEMERAL and message.user:
            return f"ephemeral to {self.people.name(message.user)}"
        return "#" + self.channels.get(message.channel, message.channel)

    def _frame(self, title: str, lines: list[str]) -> None:
        self._lines.append(self.style.dim(f"── {title} ──"))
        self._lines += [f"  {line}" for line in lines]

    def _next_number(self) -> int:
        return len(self._batch) + 1

    def _numbered(
        self,
        rendering: Rendering,
        message: Message | None = None,
        home: View | None = None,
        user: str | None = None,
    ) -> None:
        self._batch += [Pressable(b, message, home, user) for b in rendering.buttons]


def _flag(value: Any) -> bool:
    """Booleans arrive as JSON true or, form-encoded, as "true"."""
    return value is True or str(value).lower() == "true"


def _has_button(blocks: list[Block], button: Button) -> bool:
    for block in blocks:
        if block.get("block_id", "") != button.block_id:
            continue
        elements = [*block.get("elements", []), block.get("accessory") or {}]
        if any(
            e.get("action_id") == button.action_id and e.get("value") == button.element.get("value")
            for e in elements
        ):
            return True
    return False
