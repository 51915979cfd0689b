"""The reserve form's fields -> a draft and the errors by field."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.domain.catalog import Catalog, default_catalog
from bot.domain.grammar.values import Builder, region_value
from bot.domain.grammar.vocabulary import (
    ACCEPTED_FORMS,
    ACCOUNT_RE,
    RequestSyntaxError,
    bad_value,
)
from bot.domain.request import (
    Environment,
    RequestDraft,
    Workload,
    clean_text,
)


def parse_form(
    fields: dict[str, str | None], *, now: datetime, catalog: Catalog | None = None
) -> tuple[RequestDraft, dict[str, str]]:
    """The reserve form's fields -> (draft, errors by field name).

    Each field goes through the same readers as the text grammar, so a form and a
    command accept exactly the same values. Empty optional fields are simply left out.
    """
    b = Builder(catalog or default_catalog(), now)
    errors: dict[str, str] = {}

    def read(name: str, store_as: str, reader: Callable[[str, str], object]) -> None:
        raw = (fields.get(name) or "").strip()
        if not raw:
            return
        try:
            b.fields[store_as] = reader(raw.lower() if name != "reason" else raw, raw)
        except RequestSyntaxError as exc:
            errors[name] = str(exc)

    read("count", "count", b.count)
    read("instance_type", "instance_type", lambda v, t: b.instance_type(v, t)[0])
    read("duration", "duration_hours", b.duration)
    date_text = (fields.get("start_date") or "").strip()
    if date_text:
        time_text = (fields.get("start_time") or "").strip()
        stamp = f"{date_text}T{time_text}Z" if time_text else date_text
        try:
            b.fields["start"] = b.start(stamp.lower(), stamp)
        except RequestSyntaxError as exc:
            errors["start_date"] = str(exc)
    read("region", "region", region_value)
    # A value the form does not offer is refused, not read as "either" ("any").
    env = (fields.get("environment") or "").strip().lower()
    if env in (e.value for e in Environment):
        b.fields["environment"] = Environment(env)
    elif env not in ("", "any"):
        errors["environment"] = f"environment {clean_text(env)[:40]!r}: accepted: ec2 or sagemaker"
    workload = (fields.get("workload") or "").strip().lower()
    if workload in (w.value for w in Workload):
        b.fields["workload"] = Workload(workload)
    elif workload:
        errors["workload"] = (
            f"workload {clean_text(workload)[:40]!r}: accepted: {ACCEPTED_FORMS['workload']}"
        )
    b.fields["interruptible"] = bool((fields.get("interruptible") or "").strip())
    read("utilization", "utilization_pct", b.utilization)
    read("reason", "reason", b.reason)
    account = (fields.get("account") or "").strip().lower()
    if account and ACCOUNT_RE.fullmatch(account):
        b.fields["account"] = account
    elif account:
        errors["account"] = str(bad_value("account", account))
    draft = RequestDraft.model_validate({k: v for k, v in b.fields.items() if v is not None})
    for name in draft.missing():
        errors.setdefault("start_date" if name == "start" else name, f"{name} is required")
    return draft, errors
