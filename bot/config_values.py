"""How configuration values are read and shown: durations (`90s`, `15m`, `24h`, `2d`,
`1w`), lists, unset values, and secrets masked in error messages."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION_RE = re.compile(r"([0-9]+)\s*(s|m|h|d|w)")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_config_duration(text: str) -> timedelta:
    """`90s`, `15m`, `24h`, `2d`, `1w` -> timedelta. Raises ValueError otherwise."""
    m = _DURATION_RE.fullmatch(text.strip().lower())
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"{text!r} is not a duration")
    return timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])


def format_config_duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit in ("w", "d", "h", "m"):
        # 24h reads better than 1d; 2d better than 48h.
        if seconds % _UNITS[unit] == 0 and (unit in ("h", "m") or seconds >= 2 * _UNITS[unit]):
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


def show_setting(value: object) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, timedelta):
        return format_config_duration(value)
    if isinstance(value, list | tuple):
        return ",".join(show_setting(v) for v in value) or "(empty)"
    return str(value)


def mask(env: str, value: object) -> str:
    text = str(value)
    if any(word in env for word in ("TOKEN", "SECRET")):
        return repr(text[:5] + "…") if len(text) > 5 else "'…'"
    return repr(text)
