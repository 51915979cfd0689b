"""Policy evaluation as AWS describes it
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html),
for the elements the shipped policies use."""

from __future__ import annotations

from typing import Any

import pytest

from aws_sandbox.iam_policy import Decision, Policies

ARN = "arn:aws:ec2:us-east-1:123456789012:instance/i-1"


def _one(statement: dict[str, Any]) -> Policies:
    return Policies(({"Version": "2012-10-17", "Statement": [statement]},))


def _allow(**more: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*"} | more


def test_nothing_is_allowed_unless_a_statement_allows_it() -> None:
    assert _one(_allow()).decide("ec2:RunInstances", ARN, {}) is Decision.IMPLICIT_DENY
    assert _one(_allow()).decide("EC2:terminateinstances", ARN, {}) is Decision.ALLOW


def test_an_explicit_deny_overrides_any_allow() -> None:
    deny = {"Effect": "Deny", "Action": "ec2:*", "Resource": "arn:aws:ec2:*:*:instance/*"}
    policies = Policies(({"Statement": [_allow()]}, {"Statement": deny}))
    assert policies.decide("ec2:TerminateInstances", ARN, {}) is Decision.EXPLICIT_DENY


def test_a_resource_pattern_matches_with_wildcards_case_sensitively() -> None:
    policies = _one(_allow(Resource="arn:aws:ec2:*:*:instance/i-?"))
    assert policies.decide("ec2:TerminateInstances", ARN, {}) is Decision.ALLOW
    assert policies.decide("ec2:TerminateInstances", ARN.upper(), {}) is Decision.IMPLICIT_DENY


@pytest.mark.parametrize(
    ("condition", "context", "allowed"),
    [
        ({"Null": {"aws:ResourceTag/k": "false"}}, {"aws:ResourceTag/k": ["v"]}, True),
        ({"Null": {"aws:ResourceTag/k": "false"}}, {}, False),
        ({"StringEquals": {"ec2:CreateAction": ["A", "B"]}}, {"ec2:CreateAction": ["B"]}, True),
        ({"StringEquals": {"ec2:CreateAction": "A"}}, {}, False),
        ({"StringNotEquals": {"ec2:CreateAction": ["A", "B"]}}, {"ec2:CreateAction": ["B"]}, False),
        ({"StringNotEquals": {"ec2:CreateAction": "A"}}, {}, True),
        ({"StringLike": {"aws:RequestTag/k": "gpu-*"}}, {"aws:RequestTag/k": ["gpu-1"]}, True),
        (
            {"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}},
            {"aws:TagKeys": ["a", "c"]},
            False,
        ),
        ({"ForAnyValue:StringEquals": {"aws:TagKeys": "c"}}, {"aws:TagKeys": ["a", "c"]}, True),
        ({"StringEqualsIfExists": {"ec2:CreateAction": "A"}}, {}, True),
    ],
)
def test_conditions(
    condition: dict[str, Any], context: dict[str, list[str]], allowed: bool
) -> None:
    decision = _one(_allow(Condition=condition)).decide("ec2:TerminateInstances", ARN, context)
    assert (decision is Decision.ALLOW) == allowed


def test_an_operator_the_evaluator_does_not_know_is_not_guessed() -> None:
    policies = _one(_allow(Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}))
    with pytest.raises(ValueError, match="IpAddress"):
        policies.decide("ec2:TerminateInstances", ARN, {"aws:SourceIp": ["10.1.1.1"]})
