"""Log lines: who and what they concern, and nothing secret.

Every line carries the request id, the Slack user and the job id it concerns (set with
`bind`, kept in contextvars: the after-ack pool and the worker carry them into their
threads). `GPU_BOT_LOG_FORMAT=json` writes one JSON object per line for a log
pipeline; the default, `text`, stays readable in a shell. Either way a filter on the
handler masks tokens and secrets before a line is written, whatever logged them.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import SecretStr

T = TypeVar("T")
FIELDS = ("request_id", "slack_user", "job_id")
_vars = {name: contextvars.ContextVar[str | None](name, default=None) for name in FIELDS}
# Slack tokens (bot, user, app-level, refresh, config) and anything that looks like one.
_TOKEN = re.compile(r"\b(xox[abeoprs]|xapp|xoxe\.xox[bp])-[A-Za-z0-9-]+")
MASK = "[redacted]"


def context() -> dict[str, str]:
    """The fields bound now (unset ones left out)."""
    return {name: value for name, var in _vars.items() if (value := var.get()) is not None}


@contextmanager
def bind(**fields: str | None) -> Iterator[None]:
    """Lines logged inside concern these (request_id, slack_user, job_id)."""
    tokens = [_vars[name].set(value) for name, value in fields.items() if value]
    try:
        yield
    finally:
        for token in reversed(tokens):
            token.var.reset(token)


def set_fields(**fields: str | None) -> None:
    """Bind for the rest of this context (a Bolt middleware's thread: the request)."""
    for name, value in fields.items():
        if value:
            _vars[name].set(value)


def start_fields(**fields: str | None) -> None:
    """Bind these for the rest of this context and unbind the others: the start of a
    request on a pool thread that served another before (Bolt runs listeners after its
    middleware returns, so they cannot be wrapped)."""
    for name, var in _vars.items():
        var.set(fields.get(name) or None)


def run_bound(fn: Callable[[], T], **fields: str | None) -> T:
    """`fn()` in a copy of this context with `fields` bound: whatever it binds later
    (a request id once created) stays with it, not with the thread."""

    def inner() -> T:
        set_fields(**fields)
        return fn()

    return contextvars.copy_context().run(inner)


def secrets_of(*values: SecretStr | None) -> list[str]:
    return [v.get_secret_value() for v in values if v is not None]


class Redact(logging.Filter):
    """Masks the given secrets and anything shaped like a Slack token, in the message
    and in a traceback."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)

    def clean(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return _TOKEN.sub(MASK, text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self.clean(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        return True


class Context(logging.Filter):
    """Puts the bound fields on each record (and `context`, for the text format)."""

    def filter(self, record: logging.LogRecord) -> bool:
        bound = context()
        for name in FIELDS:
            setattr(record, name, bound.get(name))
        shown = " ".join(f"{k.removesuffix('_id')}={v}" for k, v in bound.items())
        record.context = f" [{shown}]" if shown else ""
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {name: v for name in FIELDS if (v := getattr(record, name, None))}
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False)


TEXT = "%(asctime)s %(levelname)s %(name)s:%(context)s %(message)s"


def configure(level: str, style: str = "text", secrets: Iterable[str] = ()) -> logging.Handler:
    """One handler on the root logger, to stderr, in `style` (text or json)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if style == "json" else logging.Formatter(TEXT))
    handler.addFilter(Context())
    handler.addFilter(Redact(secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
