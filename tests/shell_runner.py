"""`gpu-bot shell` run in this process: the same session, console and bot as the command,
on `memory://` and the stored manual clock, fed a script. A story takes a fraction of a
second instead of a child process's start-up and imports."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from bot.shell.console_api import ConsoleSlack, shell_settings
from bot.shell.people import People
from bot.shell.session import Session
from bot.shell.terminal import Terminal

# What a newcomer's shell sees: none of the machine's Slack, AWS or Redis settings.
_OWN_PREFIXES = ("SLACK_", "GPU_BOT_", "AWS_", "REDIS_")


class _Warnings(logging.Handler):
    """What the shell would have printed to stderr: warnings and errors of the bot."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def _clean_environment(**extra: str) -> Iterator[None]:
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith(_OWN_PREFIXES)]:
        del os.environ[key]
    os.environ.update(extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_shell_here(script: str, **environment: str) -> str:
    """The transcript of `gpu-bot shell < script`, with `environment` (GPU_BOT_… settings)
    on top of an empty one. Nothing may be logged at warning or above: in the command
    that would be on stderr."""
    warnings = _Warnings()
    bot_log = logging.getLogger("bot")
    bot_log.addHandler(warnings)
    out = io.StringIO()
    try:
        with _clean_environment(**environment):
            slack = ConsoleSlack(shell_settings())
        terminal = Terminal(io.StringIO(script), out, interactive=False, color=False)
        try:
            code = Session(slack, terminal, People()).run()
        finally:
            slack.close()
    finally:
        bot_log.removeHandler(warnings)
    assert code == 0, out.getvalue()
    assert not warnings.lines, "\n".join(warnings.lines)
    return out.getvalue()


def section(transcript: str, heading: str) -> str:
    """The lines under the first `── heading ──` frame (its indented body)."""
    lines = transcript.splitlines()
    start = lines.index(f"── {heading} ──") + 1
    body = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        body.append(line)
    return "\n".join(body)


def approved(request: str, pick: str = "") -> list[str]:
    """Shell steps: `/gpu reserve REQUEST`, submitted (`pick`: the option's number in the
    form; empty: the recommended one) and approved by alice, back as you."""
    return [f"/gpu reserve {request}", "press 1", pick, "", "as alice", "press 1", "y", "as you"]
