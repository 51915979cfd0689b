"""Where the Slack and AWS adapters report each call they make (for the metrics).

Process-wide, as a metrics registry is: the composition root sets the observer once;
until then calls are reported nowhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)
# (service, operation, seconds, error code or "")
CallObserver = Callable[[str, str, float, str], None]


def _nowhere(service: str, operation: str, seconds: float, error: str) -> None:
    return None


_observer: list[CallObserver] = [_nowhere]


def set_call_observer(observer: CallObserver) -> None:
    _observer[0] = observer


def observe_call(service: str, operation: str, seconds: float, error: str = "") -> None:
    try:
        _observer[0](service, operation, seconds, error)
    except Exception:  # counting a call must never fail the call
        log.debug("could not count a %s call", service, exc_info=True)
