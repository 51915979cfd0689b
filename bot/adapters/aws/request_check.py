"""Check request parameters against botocore's service model before sending them.

botocore checks types and required members client-side; AWS checks enums, maximums and
patterns on the server. Both halves run here, so a plan printed for review is one AWS
would accept as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import botocore.session
from botocore.model import ServiceModel
from botocore.validate import ParamValidator

from aws_sandbox.shapes import request_violations


@cache
def service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def request_problems(service: str, operation: str, params: Mapping[str, Any]) -> list[str]:
    """Every way `params` breaks `operation`'s input shape; empty when AWS would take it."""
    shape = service_model(service).operation_model(operation).input_shape
    if shape is None:
        return [f"{operation}: takes no parameters"] if params else []
    report = ParamValidator().validate(dict(params), shape)
    problems = [report.generate_report()] if report.has_errors() else []
    problems += [
        f"{v.aws_path()}: {v.value!r}: {v.constraint}" for v in request_violations(shape, params)
    ]
    return [f"{operation}: {p}" for p in problems]
