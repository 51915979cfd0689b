"""Reading and writing for the shell: a readline prompt with history on a terminal, or
lines from a pipe echoed after their prompt so that the output reads as a transcript."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

HISTORY = Path.home() / ".gpu-bot-shell-history"
HISTORY_LENGTH = 1000


class EndOfInput(Exception):
    """The input ended (Ctrl-D, or the end of a script)."""


def without_comment(line: str) -> str:
    """The line without its comment: a `#` at the start of the line, or after two or more
    spaces, starts one (outside double quotes), so that a script can say what each line
    does. What is left may be empty: at a form's question, that is Enter."""
    quoted = False
    for i, ch in enumerate(line):
        if ch in '"“”':
            quoted = not quoted if ch == '"' else ch == "“"
        elif ch == "#" and not quoted and (i == 0 or line[max(0, i - 2) : i] == "  "):
            return line[:i].rstrip()
    return line


class Terminal:
    def __init__(self, stdin: TextIO, stdout: TextIO, interactive: bool, color: bool) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.interactive = interactive
        self.color = color
        self._given_back: list[str] = []  # lines to read again, first one first
        if interactive:
            _load_history()

    @classmethod
    def attach(cls) -> Terminal:
        """The process's stdin and stdout; colour only on a terminal that wants it."""
        color = (
            sys.stdout.isatty()
            and "NO_COLOR" not in os.environ
            and os.environ.get("TERM", "") != "dumb"
        )
        return cls(sys.stdin, sys.stdout, interactive=sys.stdin.isatty(), color=color)

    def read(self, prompt: str, remember: bool = True) -> str:
        """One line; `remember=False` keeps answers to form questions out of history."""
        if self._given_back:
            line = self._given_back.pop(0)
            self.write(prompt + line)
            return without_comment(line)
        if self.interactive:
            try:
                line = input(prompt)
            except EOFError:
                self.stdout.write("\n")
                raise EndOfInput from None
            if not remember and line:
                _forget_last()
            return without_comment(line)
        line = self.stdin.readline()
        if not line:
            raise EndOfInput
        line = line.rstrip("\r\n")
        self.write(prompt + line)  # as typed, comment and all: the transcript reads as the script
        return without_comment(line)

    def give_back(self, line: str) -> None:
        """The next `read` returns `line` again (a piped line that was not the answer to
        the question asked is the script's next command)."""
        self._given_back.append(line)

    def write(self, text: str) -> None:
        if text:
            self.stdout.write(text + "\n")
            self.stdout.flush()

    def close(self) -> None:
        if self.interactive:
            _save_history()


# readline is imported only for a terminal: on import it may write escape codes, and a
# pipe must never see those.


def _load_history() -> None:
    import readline

    readline.set_history_length(HISTORY_LENGTH)
    with contextlib.suppress(OSError):  # no history yet, or unreadable: start without
        readline.read_history_file(HISTORY)


def _forget_last() -> None:
    import readline

    last = readline.get_current_history_length() - 1
    if last >= 0:
        readline.remove_history_item(last)


def _save_history() -> None:
    import readline

    with contextlib.suppress(OSError):  # a read-only home: history is a convenience
        readline.write_history_file(HISTORY)
