"""`gpu-bot config`: check the configuration and show every setting."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bot.cli.output import settings_or_exit
from bot.config import Settings
from bot.config_values import show_setting


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="check the configuration and list every setting")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_or_exit()
    values = settings.model_dump()
    for (env, default, accepted), name in zip(
        Settings.describe(), Settings.model_fields, strict=True
    ):
        value = values[name]
        secret = "TOKEN" in env or "SECRET" in env
        shown = "(set)" if secret and value else _without_password(show_setting(value))
        print(f"{env:30} {shown:24} (default {default}) {accepted}")
    return 0


def _without_password(text: str) -> str:
    """A URL with its password masked (REDIS_URL may carry one)."""
    if "://" not in text:
        return text
    parts = urlsplit(text)
    if not parts.password:
        return text
    netloc = parts.netloc.replace(f":{parts.password}@", ":****@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
