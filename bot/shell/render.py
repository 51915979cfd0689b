"""Block Kit as terminal text: headers, sections and fields, context, dividers, inputs,
and buttons numbered `[1] Approve  [2] Reject…` so they can be pressed. Pure: blocks in,
lines and the numbered buttons out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.shell.forms import FormField
from bot.shell.mrkdwn import Names, printable, to_text, unescape
from bot.shell.style import Style

Block = dict[str, Any]
DIVIDER = "─" * 40
_LABELLED_FIELD = "*"  # a field like "*Requester*\n<@U1>" reads "Requester: @you"


@dataclass(frozen=True)
class Button:
    number: int | None  # None where buttons cannot be pressed (inside a modal)
    block_id: str
    element: Block

    @property
    def action_id(self) -> str:
        return str(self.element.get("action_id", ""))

    @property
    def value(self) -> str | None:
        value = self.element.get("value")
        return None if value is None else str(value)

    @property
    def label(self) -> str:
        return printable(str(self.element.get("text", {}).get("text", "")))


@dataclass
class Rendering:
    lines: list[str] = field(default_factory=list)
    buttons: list[Button] = field(default_factory=list)


@dataclass(frozen=True)
class Renderer:
    style: Style
    names: Names

    def mrkdwn(self, text: str) -> str:
        return to_text(text, self.style, self.names)

    def text(self, obj: dict[str, Any] | None) -> str:
        """A text object; plain_text is shown as typed, mrkdwn is interpreted."""
        if not obj:
            return ""
        text = str(obj.get("text", ""))
        # Slack reads &amp; &lt; &gt; as entities in plain text too.
        return self.mrkdwn(text) if obj.get("type") == "mrkdwn" else printable(unescape(text))

    def message(self, blocks: list[Block], text: str, first_button: int = 1) -> Rendering:
        """A message: its blocks, or its text when it has none (text is mrkdwn)."""
        if blocks:
            return self.blocks(blocks, first_button)
        return Rendering(self.mrkdwn(text).split("\n") if text else [])

    def view(self, view: dict[str, Any], first_button: int | None) -> Rendering:
        """A modal or App Home view; a modal ends with its submit and close buttons."""
        out = self.blocks(view.get("blocks", []), first_button)
        if view.get("type") == "modal":
            labels = [self.text(view.get(k)) for k in ("submit", "close") if view.get(k)]
            out.lines.append("  ".join(f"[{label}]" for label in labels))
        return out

    def confirm(self, dialog: dict[str, Any]) -> list[str]:
        """A button's confirm dialog: title and text (the answer is asked for apart)."""
        lines = [self.style.bold(self.text(dialog.get("title")))]
        return lines + self.text(dialog.get("text")).split("\n")

    def blocks(self, blocks: list[Block], first_button: int | None = 1) -> Rendering:
        drawing = _Drawing(self, first_button)
        for block in blocks:
            drawing.block(block)
        return drawing.out


class _Drawing:
    """One rendering in progress: lines so far and the next button number."""

    def __init__(self, renderer: Renderer, first_button: int | None) -> None:
        self.r = renderer
        self.style = renderer.style
        self.next_number = first_button
        self.out = Rendering()

    def block(self, block: Block) -> None:
        kind = block.get("type")
        if kind == "header":
            self.out.lines.append(self.style.heading(self.r.text(block.get("text"))))
        elif kind == "section":
            self._section(block)
        elif kind == "divider":
            self.out.lines.append(self.style.dim(DIVIDER))
        elif kind == "context":
            self._context(block)
        elif kind == "actions":
            line = "  ".join(self._element(e, block) for e in block.get("elements", []))
            self.out.lines.append(line)
        elif kind == "image":
            self.out.lines.append(f"[image: {printable(str(block.get('alt_text', '')))}]")
        elif kind == "input":
            self._input(block)
        else:
            self.out.lines.append(f"[{kind} block]")

    def _section(self, block: Block) -> None:
        if block.get("text"):
            self.out.lines += self.r.text(block["text"]).split("\n")
        for item in block.get("fields", []):
            self.out.lines.append(self._field(item))
        if block.get("accessory"):
            self.out.lines.append(self._element(block["accessory"], block))

    def _field(self, item: dict[str, Any]) -> str:
        text = str(item.get("text", ""))
        label, newline, value = text.partition("\n")
        is_label = len(label) > 2 and label[0] == label[-1] == _LABELLED_FIELD
        if item.get("type") != "mrkdwn" or not newline or not is_label:
            return self.r.text(item).replace("\n", " / ")
        shown = self.r.mrkdwn(value).replace("\n", " / ")
        return f"{self.style.label(self.r.mrkdwn(label[1:-1]))}: {shown}"

    def _context(self, block: Block) -> None:
        parts = []
        for element in block.get("elements", []):
            if element.get("type") == "image":
                parts.append(f"[image: {printable(str(element.get('alt_text', '')))}]")
            else:
                parts.append(self.r.text(element))
        self.out.lines += [self.style.dim(f"› {line}") for line in " · ".join(parts).split("\n")]

    def _input(self, block: Block) -> None:
        form_field = FormField.of(block)
        label = form_field.label + (" (optional)" if form_field.optional else "")
        shown = form_field.shown(form_field.initial()) if form_field.fillable else ""
        if not shown:
            placeholder = form_field.element.get("placeholder")
            shown = self.style.dim(f"({self.r.text(placeholder)})") if placeholder else ""
        self.out.lines.append(f"{self.style.label(label)}: {shown}".rstrip())
        if form_field.hint:
            self.out.lines.append(self.style.dim(f"  {form_field.hint}"))

    def _element(self, element: Block, block: Block) -> str:
        if element.get("type") != "button":
            return f"‹{element.get('type')}›"
        button = Button(self.next_number, str(block.get("block_id", "")), element)
        self.out.buttons.append(button)
        text = self.style.button(button.label, element.get("style"))
        if self.next_number is None:
            return f"[{text}]"
        self.next_number += 1
        return f"[{button.number}] {text}"
