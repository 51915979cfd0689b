"""The IAM policies in deploy/ grant exactly what the adapters call: derived from the code.

Every AWS operation an adapter module can call is found in its source (tests/iam_calls.py),
joined by the dependent actions AWS's Service Authorization Reference lists for it
(aws_sandbox/iam_reference.py), and compared with the policy that module's deployment
attaches. A call added without its action fails here, and so does an action no code
calls any more. A deployment that buys attaches the quote and the purchase policies; one
that also deploys endpoints attaches the deploy policy as well: a policy may leave out
what an earlier one grants, and grants nothing its own modules do not call or need.
Whether each grant is on the right resource types and conditions:
tests/unit/test_iam_against_aws_reference.py.
"""

from __future__ import annotations

import pytest

from tests.iam_calls import ADAPTERS, POLICY_FILES, POLICY_OF, called, calls_in, policy_document
from tests.iam_reference_checks import needed as with_dependents


def needed(policy: str) -> set[str]:
    return set(with_dependents(called(policy)))


def granted(policy: str) -> set[str]:
    actions: set[str] = set()
    for statement in policy_document(policy)["Statement"]:
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
    # Dependent actions come from AWS's reference, not from a list of ours.
    assert {"sagemaker:CreateReservedCapacity", "sagemaker:AddTags", "ec2:CreateTags"} <= purchase
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
