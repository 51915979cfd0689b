"""Modal input blocks as questions: what to ask, what the answer means, and the element
state Slack would submit. Pure; the session does the asking.

Answers: Enter keeps the value shown, `-` clears it, a select takes an option number,
value or text, checkboxes take y/n (or option numbers when there are several). Whatever
Slack's client refuses before submitting (a missing required field, a number out of
range, a malformed date) is refused here too, with `FieldError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from bot.shell.mrkdwn import printable

Element = dict[str, Any]
State = dict[str, Any]

TEXT_INPUTS = ("plain_text_input", "number_input", "email_text_input", "url_text_input")
SINGLE_CHOICE = ("static_select", "radio_buttons")
KEEP, CLEAR = "", "-"
_ONE_PER_LINE = 8  # longer option lists are packed into lines of _WIDTH characters
_WIDTH = 96
_TIME = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# Where each element's submitted state keeps its value (text inputs: "value"), and the
# element property that sets it initially.
_VALUE_KEYS = {
    "static_select": "selected_option",
    "radio_buttons": "selected_option",
    "checkboxes": "selected_options",
    "datepicker": "selected_date",
    "timepicker": "selected_time",
}
_INITIAL = {
    "selected_option": "initial_option",
    "selected_options": "initial_options",
    "selected_date": "initial_date",
    "selected_time": "initial_time",
    "value": "initial_value",
}


class FieldError(ValueError):
    """An answer Slack's client would not accept; the message says what would be."""


def option_text(option: dict[str, Any]) -> str:
    return printable(str(option.get("text", {}).get("text", option.get("value", ""))))


@dataclass(frozen=True)
class FormField:
    block_id: str
    action_id: str
    label: str
    element: Element
    optional: bool
    hint: str | None

    @classmethod
    def of(cls, block: dict[str, Any]) -> FormField:
        """The field of an input block."""
        element = block.get("element", {})
        hint = block.get("hint", {}).get("text")
        return cls(
            block_id=str(block.get("block_id", "")),
            action_id=str(element.get("action_id", "")),
            label=printable(str(block.get("label", {}).get("text", ""))),
            element=element,
            optional=bool(block.get("optional", False)),
            hint=printable(hint) if hint else None,
        )

    @property
    def kind(self) -> str:
        return str(self.element.get("type", ""))

    @property
    def fillable(self) -> bool:
        return self.kind in TEXT_INPUTS or self.kind in _VALUE_KEYS

    @property
    def options(self) -> list[dict[str, Any]]:
        return list(self.element.get("options", []))

    # --- state ------------------------------------------------------------------------

    @property
    def _key(self) -> str:
        return _VALUE_KEYS.get(self.kind, "value")

    def _state(self, value: Any) -> State:
        return {"type": self.kind, self._key: value}

    def initial(self) -> State:
        """The state Slack submits for this element when nobody touches it."""
        initial = self.element.get(_INITIAL[self._key])
        return self._state([] if initial is None and self.kind == "checkboxes" else initial)

    def is_empty(self, state: State) -> bool:
        return state.get(self._key) in (None, "", [])

    def shown(self, state: State) -> str:
        """The state as the answer that would produce it ("" when empty)."""
        value = state.get(self._key)
        if self.kind in SINGLE_CHOICE:
            return option_text(value) if value else ""
        if self.kind == "checkboxes":
            if len(self.options) == 1:
                return "y" if value else "n"
            return ", ".join(option_text(o) for o in value or [])
        return printable(str(value or ""))

    def choices(self) -> list[str]:
        """The numbered options to show before asking (none for a yes/no checkbox)."""
        if self.kind not in SINGLE_CHOICE and self.kind != "checkboxes":
            return []
        if self.kind == "checkboxes" and len(self.options) == 1:
            return []
        numbered = [f"{i}) {option_text(o)}" for i, o in enumerate(self.options, 1)]
        return numbered if len(numbered) <= _ONE_PER_LINE else _packed(numbered, _WIDTH)

    def question(self, state: State) -> str:
        """The prompt: label, what kind of answer, and the value Enter keeps."""
        text = self.label
        if self.kind == "checkboxes" and len(self.options) == 1:
            text += f": {option_text(self.options[0])}? y/n"
        elif self.kind in SINGLE_CHOICE or self.kind == "checkboxes":
            text += f" (1-{len(self.options)})"
        elif self.kind == "datepicker":
            text += " (YYYY-MM-DD)"
        elif self.kind == "timepicker":
            text += " (HH:MM)"
        if self.optional:
            text += " (optional)"
        shown = self.shown(state)
        return f"{text} [{shown}]: " if shown else f"{text}: "

    # --- answers ----------------------------------------------------------------------

    def answer(self, text: str, state: State) -> State:
        """The new state for an answer; `FieldError` when Slack would refuse it."""
        text = text.strip()
        if text == KEEP:
            new = state
        elif text == CLEAR:
            new = self._state([] if self.kind == "checkboxes" else None)
        else:
            new = self._parse(text)
        if not self.optional and self.is_empty(new):
            raise FieldError("This field is required.")
        return new

    def _parse(self, text: str) -> State:
        if self.kind in SINGLE_CHOICE:
            return self._state(self._option(text))
        if self.kind == "checkboxes":
            return self._state(self._ticked(text))
        if self.kind == "datepicker":
            return self._state(_date(text))
        if self.kind == "timepicker":
            if not _TIME.fullmatch(text):
                raise FieldError("Give a time as HH:MM, 00:00 to 23:59.")
        elif self.kind == "number_input":
            self._check_number(text)
        else:
            self._check_length(text)
        return self._state(text)

    def _option(self, text: str) -> dict[str, Any]:
        options = self.options
        if text.isdigit() and 1 <= int(text) <= len(options):
            return options[int(text) - 1]
        for option in options:
            if text == option.get("value") or text.lower() == option_text(option).lower():
                return option
        raise FieldError(f"Pick 1 to {len(options)}, or an option's value.")

    def _ticked(self, text: str) -> list[dict[str, Any]]:
        options = self.options
        if len(options) == 1:
            answer = text.lower()
            if answer not in ("y", "yes", "n", "no"):
                raise FieldError("Answer y or n.")
            return options if answer.startswith("y") else []
        picked = [part.strip() for part in text.split(",")]
        if not all(p.isdigit() and 1 <= int(p) <= len(options) for p in picked):
            raise FieldError(f"Give option numbers 1 to {len(options)}, separated by commas.")
        return [options[int(p) - 1] for p in sorted(set(picked), key=int)]

    def _check_number(self, text: str) -> None:
        decimal = bool(self.element.get("is_decimal_allowed", False))
        try:
            number = float(text) if decimal else int(text)
        except ValueError:
            raise FieldError("Give a number." if decimal else "Give a whole number.") from None
        low, high = self.element.get("min_value"), self.element.get("max_value")
        if (low is not None and number < float(low)) or (high is not None and number > float(high)):
            raise FieldError(f"Give a number from {low or '…'} to {high or '…'}.")

    def _check_length(self, text: str) -> None:
        low, high = self.element.get("min_length"), self.element.get("max_length")
        if high is not None and len(text) > int(high):
            raise FieldError(f"Keep it to {high} characters.")
        if low is not None and len(text) < int(low):
            raise FieldError(f"Give at least {low} characters.")


def _packed(items: list[str], width: int, gap: str = "   ") -> list[str]:
    """Items side by side in lines of at most `width` characters, never split."""
    lines = [items[0]]
    for item in items[1:]:
        if len(lines[-1]) + len(gap) + len(item) <= width:
            lines[-1] += gap + item
        else:
            lines.append(item)
    return lines


def _date(text: str) -> str:
    try:
        if not _DATE.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise FieldError("Give a date as YYYY-MM-DD.") from None
