"""Each AWS call's time and error code, reported to bot.adapters.calls (the metrics).

On botocore's own events: `before-parameter-build` stamps the start (it comes before the
sandbox's `before-call` answer, which ends that event early), `after-call` sees every
answer (HTTP or sandbox) and `after-call-error` a call that got none.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.client import BaseClient

from bot.adapters.calls import observe_call

_STARTED = "gpu_bot_started"
# How EC2 says "this would have succeeded" to a DryRun: not an error to alert on.
_SUCCESS = {"DryRunOperation"}


def count_calls(client: Any) -> None:
    """Report this client's calls (once, however often it is asked); a stand-in that
    is not a botocore client is left as it is."""
    if not isinstance(client, BaseClient) or getattr(client.meta, "gpu_bot_counted", False):
        return
    setattr(client.meta, "gpu_bot_counted", True)  # noqa: B010 - botocore's meta is open
    service = client.meta.service_model.service_name
    events = client.meta.events

    def started(model: Any, context: dict[str, Any], **_: Any) -> None:
        context[_STARTED] = (model.name, time.monotonic())

    def answered(
        http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        error = ""
        if getattr(http_response, "status_code", 200) >= 300:
            error = str((parsed.get("Error") or {}).get("Code") or http_response.status_code)
        if error in _SUCCESS:
            error = ""
        _report(service, context, error)

    def failed(exception: Exception, context: dict[str, Any], **_: Any) -> None:
        _report(service, context, type(exception).__name__)

    events.register("before-parameter-build", started, unique_id="gpu-bot-count-start")
    events.register("after-call", answered, unique_id="gpu-bot-count-answer")
    events.register("after-call-error", failed, unique_id="gpu-bot-count-error")


def _report(service: str, context: dict[str, Any], error: str) -> None:
    began = context.get(_STARTED)
    if not isinstance(began, tuple):
        return
    operation, at = began
    observe_call(f"aws.{service}", operation, time.monotonic() - at, error)
