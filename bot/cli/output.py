"""Shared terminal output helpers for the subcommands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

from bot.config import ConfigError, Settings, load_settings


def console() -> Console:
    # Piped output (CI logs, `| less`) gets a wide fixed width instead of rich's 80 columns.
    width = None if sys.stdout.isatty() else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def fail(message: str, code: int = 2) -> int:
    """Print a usage-style error on stderr and return its exit status."""
    sys.stderr.write(f"gpu-bot: {message}\n")
    return code


def settings_or_exit(load: Callable[[], Settings] = load_settings) -> Settings:
    """The settings, or exit 1 with the message that lists every bad variable."""
    try:
        return load()
    except ConfigError as exc:
        sys.stderr.write(f"gpu-bot: {exc}\n")
        raise SystemExit(1) from None
