"""A purchase the deployed IAM does not allow, end to end: every lifecycle test runs under
the policies in deploy/ (tests/iam_sandbox.py); here a statement is missing from a copy of
them, AWS (the sandbox) refuses the call as it would, nothing is bought, and the requester
and the approval card are told which permission is missing and where to grant it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.domain.lifecycle import State
from tests.iam_sandbox import guard, without
from tests.integration.test_purchasing import BLOCK, PLAN, approve, card_text, dms, market
from tests.integration.test_slack_flow import submitted


@pytest.mark.parametrize(
    ("statement", "text", "pick", "kind", "missing"),
    [
        # CreateTrainingPlan's dependent action: no dry run exists for plans, so AWS
        # refuses the purchase itself, after the approval.
        (
            "TheReservedCapacityATrainingPlanCreates",
            PLAN,
            "training-plan:0",
            "training-plan",
            "sagemaker:CreateReservedCapacity",
        ),
        # PurchaseCapacityBlock's dependent action for its tags: the dry run finds it.
        ("TagOnlyWhilePurchasing", BLOCK, "capacity-block:0", "capacity-block", "ec2:CreateTags"),
    ],
)
def test_a_purchase_the_deployed_policy_does_not_allow_is_refused_and_people_are_told(
    make_bot,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    statement: str,
    text: str,
    pick: str,
    kind: str,
    missing: str,
) -> None:
    bot = make_bot(iam=guard(without(statement, tmp_path)))
    request_id = submitted(bot, text, pick=pick)
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.state is State.QUOTED  # submit again once the role has the permission
    assert record.failure is not None
    assert f"may not call {missing}" in record.failure
    assert "deploy/iam-purchase-policy.json" in record.failure
    assert missing in card_text(bot)
    assert any(missing in t and "iam-purchase-policy.json" in t for t in dms(bot))
    assert market(bot).bought()[kind] == 0
