"""Shared terminal output helpers for the subcommands."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
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


# A spreadsheet takes a cell starting with one of these for a formula (CSV injection):
# OWASP's advice is to start every such text cell with a single quote, which shows it as
# text (https://owasp.org/www-community/attacks/CSV_Injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run; numbers (and None) as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def write_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """CSV on stdout, every text cell neutralised (`csv_cell`): user ids, team names and
    reasons come from Slack and the configuration."""
    writer = csv.writer(sys.stdout)
    writer.writerow([csv_cell(h) for h in header])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
