"""The AWS operations the adapters in bot/adapters/aws/ call, read from their source.

Every call is found in the code (a method of a boto3 client, a paginator's name, an
operation passed to `checked_call`), as "service:Operation", which is also the name of
the IAM action that authorizes it for the services the bot uses. Which policy in deploy/
must grant each module's calls is said in POLICY_OF.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
from botocore import xform_name

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ROOT / "bot" / "adapters" / "aws"
SERVICES = ("ec2", "sagemaker", "pricing", "sts")
# Which policy each adapter module's calls belong to. A new module that calls AWS must be
# placed here (tests/unit/test_iam_policies.py fails until it is).
POLICY_OF = {
    "market.py": "quote",
    "hourly_prices.py": "quote",
    "capacity_block_offerings.py": "quote",
    "training_plan_offerings.py": "quote",
    "watch_search.py": "quote",  # the same two searches as the quote
    "purchasing.py": "purchase",
    "aftercare.py": "purchase",
    "accounts.py": "purchase",
    "hosting.py": "deploy",
    "usage.py": "purchase",  # the sampling round: read-only counts of what runs
}
POLICY_FILES = {
    "quote": "iam-quote-policy.json",
    "purchase": "iam-purchase-policy.json",
    "deploy": "iam-deploy-policy.json",
}
# Each deployment attaches these policies (deploy/README.md).
ATTACHED = {
    "quote": ("quote",),
    "purchase": ("quote", "purchase"),
    "deploy": ("quote", "purchase", "deploy"),
}
# The receiver a call is made on says the service, where a method name alone does not.
RECEIVERS = {
    "ec2": "ec2",
    "ec2_once": "ec2",
    "sagemaker": "sagemaker",
    "sagemaker_once": "sagemaker",
    "sm": "sagemaker",
    "pricing": "pricing",
    "_sts": "sts",
    "_sm": "sagemaker",
}


@cache
def _operations() -> dict[str, dict[str, str]]:
    """service -> {snake_name: OperationName}"""
    session = botocore.session.get_session()
    return {
        service: {xform_name(op): op for op in session.get_service_model(service).operation_names}
        for service in SERVICES
    }


def _service_of(name: str, receiver: str | None) -> str | None:
    """The service whose client `receiver` names, if it has an operation `name`."""
    service = RECEIVERS.get(receiver or "")
    return service if service is not None and name in _operations()[service] else None


def _receiver(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _receiver(node.func)
    return None


def calls_in(source: str) -> set[str]:
    """Every "service:Operation" the source can call on a boto3 client. A paginator named
    by a variable counts every operation name written as a string in the module."""
    found: set[str] = set()
    tree = ast.parse(source)
    strings = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "checked_call" and len(node.args) >= 3:
            service, operation = node.args[1], node.args[2]
            assert isinstance(service, ast.Constant) and isinstance(operation, ast.Constant)
            found.add(f"{service.value}:{operation.value}")
            continue
        if not isinstance(func, ast.Attribute):
            continue
        receiver = _receiver(func.value)
        if func.attr == "get_paginator" and node.args:
            name = node.args[0]
            names = (
                [str(name.value)]
                if isinstance(name, ast.Constant)
                else [s for s in strings if _service_of(s, receiver) is not None]
            )
            for one in names:
                service = _service_of(one, receiver)
                assert service is not None, one
                found.add(f"{service}:{_operations()[service][one]}")
            continue
        service = _service_of(func.attr, receiver)
        if service is not None:
            found.add(f"{service}:{_operations()[service][func.attr]}")
    return found


def called(policy: str) -> set[str]:
    """The actions the modules of `policy` call."""
    actions: set[str] = set()
    for module, owner in POLICY_OF.items():
        if owner == policy:
            actions |= calls_in((ADAPTERS / module).read_text())
    return actions


def policy_document(policy: str) -> dict[str, Any]:
    document = json.loads((ROOT / "deploy" / POLICY_FILES[policy]).read_text())
    assert isinstance(document, dict)
    return document
