"""The IAM policies in deploy/ grant exactly what the adapters call: derived from the code.

Every AWS operation an adapter module can call is found in its source (a method of a
boto3 client, a paginator's name, an operation passed to `checked_call`), mapped to the
IAM actions AWS requires for it, and compared with the policy that module's deployment
attaches. A call added without its action fails here, and so does an action no code
calls any more. A deployment that buys attaches the quote and the purchase policies; one
that also deploys endpoints attaches the deploy policy as well: a policy may leave out
what an earlier one grants, and grants nothing its own modules do not call.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "bot" / "adapters" / "aws"
SERVICES = ("ec2", "sagemaker", "pricing", "sts")
# Which policy each adapter module's calls belong to. A new module that calls AWS must be
# placed here (the test below fails until it is).
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
# Actions AWS requires beside an operation's own, for the way the bot calls it: tags on
# create need the tagging action (EC2 User Guide, "Grant permission to tag resources
# during creation"; SageMaker Developer Guide, "sagemaker:AddTags" for create with Tags),
# and an endpoint configuration passes the model's execution role (iam:PassRole).
ALSO_NEEDED = {
    "ec2:PurchaseCapacityBlock": {"ec2:CreateTags"},
    "ec2:CreateCapacityReservation": {"ec2:CreateTags"},
    "sagemaker:CreateTrainingPlan": {"sagemaker:AddTags"},
    "sagemaker:CreateEndpointConfig": {"sagemaker:AddTags", "iam:PassRole"},
    "sagemaker:CreateEndpoint": {"sagemaker:AddTags"},
    "sagemaker:CreateInferenceComponent": {"sagemaker:AddTags"},
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


def needed(policy: str) -> set[str]:
    actions: set[str] = set()
    for module, owner in POLICY_OF.items():
        if owner == policy:
            for call in calls_in((ADAPTERS / module).read_text()):
                actions |= {call, *ALSO_NEEDED.get(call, ())}
    return actions


def granted(policy: str) -> set[str]:
    document = json.loads((ROOT / "deploy" / POLICY_FILES[policy]).read_text())
    actions: set[str] = set()
    for statement in document["Statement"]:
        listed = statement["Action"]
        actions |= {listed} if isinstance(listed, str) else set(listed)
    return actions


def test_every_adapter_module_that_calls_aws_has_a_policy() -> None:
    calling = {path.name for path in ADAPTERS.glob("*.py") if calls_in(path.read_text())}
    assert calling == set(POLICY_OF)


def test_the_scan_finds_the_calls_that_matter() -> None:
    # If the scan stopped seeing calls, every comparison below would pass on nothing.
    purchase = needed("purchase")
    assert {
        "ec2:PurchaseCapacityBlock",
        "ec2:PurchaseCapacityBlockExtension",
        "sagemaker:ExtendTrainingPlan",
        "ec2:TerminateInstances",
        "ec2:CancelCapacityReservation",
        "ec2:DescribeInstances",
        "ec2:DescribeInstanceTypeOfferings",
        "sts:AssumeRole",
    } <= purchase
    assert {"pricing:GetProducts", "ec2:DescribeCapacityBlockOfferings"} <= needed("quote")
    assert {"sagemaker:CreateEndpoint", "iam:PassRole"} <= needed("deploy")


@pytest.mark.parametrize(
    ("policy", "before"),
    [("quote", ()), ("purchase", ("quote",)), ("deploy", ("quote", "purchase"))],
)
def test_each_policy_grants_exactly_what_its_code_calls(
    policy: str, before: tuple[str, ...]
) -> None:
    earlier = set().union(*(granted(p) for p in before)) if before else set()
    want, have = needed(policy), granted(policy)
    assert sorted(want - have - earlier) == [], f"{POLICY_FILES[policy]} lacks these actions"
    assert sorted(have - want) == [], f"{POLICY_FILES[policy]} grants actions no code calls"


def test_the_scan_fails_when_a_call_is_added_or_an_action_removed() -> None:
    # The check itself: a call the policies do not grant is seen, a granted action that
    # nothing calls is seen.
    extra = calls_in("def f(clients):\n    clients.ec2.describe_volumes()\n")
    assert extra == {"ec2:DescribeVolumes"}
    assert "ec2:DescribeVolumes" not in granted("quote") | granted("purchase")
    assert "ec2:DescribeInstanceTypes" not in needed("quote")  # granted once, never called
