"""`gpu-bot shell`: try the bot in a terminal, with nothing else installed or running."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from bot.cli.output import settings_or_exit


def register(sub: Any) -> None:
    p = sub.add_parser(
        "shell",
        help="try the bot in a terminal: slash commands, buttons and forms, as any user",
        description=(
            "The real bot on a local Slack stand-in, the sandbox AWS market and an in-memory "
            "store. Reads commands from a pipe too: printf '/gpu help\\n' | gpu-bot shell"
        ),
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bot.shell.console_api import ConsoleSlack, shell_settings
    from bot.shell.people import People
    from bot.shell.session import Session
    from bot.shell.terminal import Terminal

    settings = settings_or_exit(shell_settings)
    # The shell's output is the conversation: only warnings go to stderr, unless a log
    # level was asked for.
    level = settings.log_level if "log_level" in settings.model_fields_set else "WARNING"
    logging.basicConfig(level=level, format="gpu-bot: %(levelname)s %(name)s: %(message)s")
    slack = ConsoleSlack(settings)
    terminal = Terminal.attach()
    try:
        return Session(slack, terminal, People()).run()
    finally:
        terminal.close()
        slack.close()
