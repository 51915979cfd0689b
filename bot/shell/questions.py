"""Asking the person at the console: a button's confirm dialog, and a modal's inputs
filled in one question at a time, submitted, and asked again for the fields the app
refused (`response_action: errors`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.shell.console_api import Ack
from bot.shell.forms import FieldError, FormField, State
from bot.shell.render import Renderer
from bot.shell.terminal import Terminal

CLOSE = "."
FORM_HELP = f"Enter keeps the value in [brackets], - clears it, {CLOSE} closes the form."
Values = dict[str, dict[str, State]]  # block id -> {action id -> element state}
# Whether a line is one of the shell's commands (it ends a form instead of filling it in).
IsCommand = Callable[[str], bool]


def confirmed(term: Terminal, renderer: Renderer, dialog: dict[str, Any]) -> bool:
    term.write("\n".join(f"  {line}" for line in renderer.confirm(dialog)))
    yes = renderer.text(dialog.get("confirm")) or "Confirm"
    no = renderer.text(dialog.get("deny")) or "Cancel"
    return yes_or_no(term, yes, no)


def yes_or_no(term: Terminal, yes: str, no: str) -> bool:
    while True:
        line = term.read(f"  {yes} (y) or {no} (n)? ", remember=False)
        answer = line.strip().lower()
        if answer in ("y", "yes", "n", "no"):
            return answer.startswith("y")
        if not term.interactive:
            # A script that does not answer goes on: asking again would swallow every
            # line after this one.
            term.write("  ! Not answered (y or n): the line runs as the next command.")
            term.give_back(line)
            return False
        term.write("  ! Answer y or n.")


def fill_in(
    term: Terminal,
    view: dict[str, Any],
    submit: Callable[[Values], Ack],
    is_command: IsCommand = lambda _line: False,
) -> Ack | None:
    """The app's answer to the accepted submission, or None when the form was closed:
    with `.`, or by a line that is a command (`is_command`), which then runs next. A
    script's next command is never taken for a field's value."""
    fields = [FormField.of(b) for b in view.get("blocks", []) if b.get("type") == "input"]
    if not fields:
        # Nothing to fill in (a confirmation): its Submit or its Close.
        yes = str((view.get("submit") or {}).get("text") or "Submit")
        no = str((view.get("close") or {}).get("text") or "Cancel")
        if yes_or_no(term, yes, no):
            return submit({})
        term.write("Form closed without submitting.")
        return None
    states = {f.block_id: f.initial() for f in fields}
    to_ask = [f for f in fields if f.fillable]
    term.write(f"Fill in the form: {FORM_HELP}")
    while True:
        for form_field in to_ask:
            state = _ask(term, form_field, states[form_field.block_id], is_command)
            if state is None:
                term.write("Form closed without submitting.")
                return None
            states[form_field.block_id] = state
        ack = submit({f.block_id: {f.action_id: states[f.block_id]} for f in fields})
        errors: dict[str, str] = ack.body.get("errors") or {}
        if ack.body.get("response_action") != "errors" or not errors:
            return ack
        labels = {f.block_id: f.label for f in fields}
        for block_id, message in errors.items():
            term.write(f"  ! {labels.get(block_id, block_id)}: {message}")
        to_ask = [f for f in fields if f.block_id in errors and f.fillable]
        if not to_ask:
            term.write("The app refused a field the shell cannot fill: form closed.")
            return None


def _ask(
    term: Terminal, form_field: FormField, state: State, is_command: IsCommand
) -> State | None:
    """The new state of one field, or None when the form is closed."""
    term.write("\n".join(f"    {line}" for line in form_field.choices()))
    while True:
        answer = term.read(f"  {form_field.question(state)}", remember=False)
        if answer.strip() == CLOSE:
            return None
        if is_command(answer.strip()):
            term.write(f"  ! `{answer.strip()[:40]}` is a command, not an answer: it runs next.")
            term.give_back(answer)
            return None
        try:
            return form_field.answer(answer, state)
        except FieldError as exc:
            term.write(f"  ! {exc}")
