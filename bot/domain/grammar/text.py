"""Request text -> a draft: each token read as the field it is."""

from __future__ import annotations

import re
from datetime import datetime

from bot.domain.catalog import Catalog, default_catalog
from bot.domain.grammar.tokens import tokenize
from bot.domain.grammar.values import Builder, region_value
from bot.domain.grammar.vocabulary import (
    ACCEPTED_FORMS,
    ACCOUNT_RE,
    COUNT_RE,
    DURATION_RE,
    ENVIRONMENTS,
    INSTANCE_RE,
    INT_PATTERN,
    KEY_ALIASES,
    REGION_RE,
    WORKLOADS,
    RequestSyntaxError,
    bad_value,
)
from bot.domain.request import (
    Environment,
    RequestDraft,
    Workload,
)


def parse_request(text: str, *, now: datetime, catalog: Catalog | None = None) -> RequestDraft:
    """Parse request text into a draft. Raises only `RequestSyntaxError`."""
    builder = Builder(catalog or default_catalog(), now)
    tokens = tokenize(text)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        lowered = token.lower()
        if lowered in ("from", "start", "for") and i >= len(tokens):
            raise RequestSyntaxError(
                f'"{token}" needs a value after it',
                token=token,
                accepted=ACCEPTED_FORMS["duration" if lowered == "for" else "start"],
            )
        if lowered in ("from", "start"):
            value = tokens[i]
            i += 1
            builder.set("start", builder.start(value.lower(), f"{token} {value}"), token)
            continue
        if lowered == "for":
            value = tokens[i]
            i += 1
            builder.set("duration_hours", builder.duration(value.lower(), value), value)
            continue
        _read_token(builder, token)
    return _draft(builder)


def _read_token(b: Builder, token: str) -> None:
    lowered = token.lower()
    key, sep, value = lowered.partition("=")
    if sep:
        field = KEY_ALIASES.get(key.strip())
        if field is None:
            raise RequestSyntaxError(
                f'unknown setting "{key}" in "{token}"',
                token=token,
                accepted="count=, type=, duration=, start=, region=, env=, workload=, "
                "util=, reason=, account=",
            )
        if field == "reason":
            # Keep the reason's case and spacing: only the key is case-insensitive.
            b.set("reason", b.reason(token.partition("=")[2], token), token)
            return
        _read_field(b, field, value.strip(), token)
        return
    if lowered == "interruptible":
        b.set("interruptible", True, token)
    elif lowered in ENVIRONMENTS:
        b.set("environment", Environment(lowered), token)
    elif lowered in WORKLOADS:
        b.set("workload", Workload(lowered), token)
    elif COUNT_RE.fullmatch(lowered):
        b.set("count", b.count(lowered, token), token)
    elif DURATION_RE.fullmatch(lowered):
        b.set("duration_hours", b.duration(lowered, token), token)
    elif REGION_RE.fullmatch(lowered):
        b.set("region", lowered, token)
    elif INSTANCE_RE.fullmatch(lowered):
        _set_instance(b, lowered, token)
    elif re.fullmatch(INT_PATTERN, lowered):
        raise RequestSyntaxError(
            f'"{token}" is a bare number',
            token=token,
            accepted=f"{token}x for a count, {token}d or {token}h for a duration",
        )
    else:
        raise RequestSyntaxError(
            f'"{token}" is not something a request understands',
            token=token,
            accepted="; ".join(ACCEPTED_FORMS.values()),
        )


def _read_field(b: Builder, field: str, value: str, token: str) -> None:
    if field == "count":
        b.set("count", b.count(value, token), token)
    elif field == "instance_type":
        _set_instance(b, value, token)
    elif field == "duration":
        b.set("duration_hours", b.duration(value, token), token)
    elif field == "start":
        b.set("start", b.start(value, token), token)
    elif field == "region":
        b.set("region", region_value(value, token), token)
    elif field == "environment":
        if value not in (e.value for e in Environment):
            raise bad_value("environment", token)
        b.set("environment", Environment(value), token)
    elif field == "workload":
        if value not in (w.value for w in Workload):
            raise bad_value("workload", token)
        b.set("workload", Workload(value), token)
    elif field == "utilization":
        b.set("utilization_pct", b.utilization(value, token), token)
    elif field == "account":
        if not ACCOUNT_RE.fullmatch(value):
            raise bad_value("account", token)
        b.set("account", value, token)
    elif field == "interruptible":
        if value not in ("yes", "true", "no", "false"):
            raise RequestSyntaxError(
                f'"{token}" is not yes or no', token=token, accepted="interruptible=yes|no"
            )
        b.set("interruptible", value in ("yes", "true"), token)


def _set_instance(b: Builder, value: str, token: str) -> None:
    name, sagemaker_form = b.instance_type(value, token)
    b.set("instance_type", name, token)
    if sagemaker_form:
        if b.fields.get("environment") == Environment.EC2:
            raise RequestSyntaxError(
                f'"{token}" is a SageMaker name but ec2 was asked for',
                token=token,
                accepted=f"{name} with ec2, or {token} (SageMaker)",
            )
        b.set("environment", Environment.SAGEMAKER, token)


def _draft(b: Builder) -> RequestDraft:
    return RequestDraft.model_validate(b.fields)
