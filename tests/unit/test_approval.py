"""The money gate as pure functions: who may approve, when, and what changes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.domain.approval import SpendingPolicy, approve, reject
from bot.domain.decisions import Outcome
from bot.domain.lifecycle import State
from tests.factories import NOW, make_record

REQUESTER = "U0REQUESTER"


def pending(**kw: object):  # type: ignore[no-untyped-def]
    base = {"state": State.PENDING_APPROVAL, "approval_deadline": NOW + timedelta(hours=24)}
    return make_record(**(base | kw))


def test_an_approver_approves() -> None:
    d = approve(pending(), "U0A", True, NOW)
    assert d.outcome is Outcome.APPROVED
    assert d.record.state is State.APPROVED
    assert d.record.approvers == ["U0A"]


@pytest.mark.parametrize(
    ("user", "is_approver", "outcome"),
    [(REQUESTER, True, Outcome.OWN_REQUEST), ("U0X", False, Outcome.NOT_APPROVER)],
)
def test_refusals_change_nothing(user: str, is_approver: bool, outcome: Outcome) -> None:
    record = pending()
    for decision in (
        approve(record, user, is_approver, NOW),
        reject(record, user, is_approver, "no", NOW),
    ):
        assert decision.outcome is outcome
        assert decision.record is record


@pytest.mark.parametrize("state", [s for s in State if s is not State.PENDING_APPROVAL])
def test_only_pending_requests_can_be_decided(state: State) -> None:
    assert approve(pending(state=state), "U0A", True, NOW).outcome is Outcome.NOT_PENDING


def test_nothing_is_decided_after_the_deadline() -> None:
    record = pending(approval_deadline=NOW)
    assert approve(record, "U0A", True, NOW).outcome is Outcome.TOO_LATE
    just_before = NOW - timedelta(seconds=1)
    assert approve(record, "U0A", True, just_before).outcome is Outcome.APPROVED


def test_two_approvals_need_two_people() -> None:
    record = pending(required_approvals=2)
    first = approve(record, "U0A", True, NOW)
    assert first.outcome is Outcome.PARTIAL
    assert first.record.state is State.PENDING_APPROVAL
    again = approve(first.record, "U0A", True, NOW)
    assert again.outcome is Outcome.ALREADY_APPROVED_BY_YOU
    second = approve(first.record, "U0B", True, NOW)
    assert second.outcome is Outcome.APPROVED
    assert second.record.approvers == ["U0A", "U0B"]


def test_a_rejection_needs_a_reason() -> None:
    assert reject(pending(), "U0A", True, "  ", NOW).outcome is Outcome.REASON_REQUIRED
    d = reject(pending(), "U0A", True, " over budget ", NOW)
    assert d.record.state is State.REJECTED
    assert d.record.rejection is not None and d.record.rejection.reason == "over budget"


@pytest.mark.parametrize(("total", "needed"), [(999.99, 1), (1000.0, 1), (1000.01, 2)])
def test_second_approval_boundary(total: float, needed: int) -> None:
    assert SpendingPolicy(second_approval_usd=1000).approvals_needed(total) == needed


def test_hard_limit_boundary() -> None:
    limits = SpendingPolicy(max_request_usd=5000)
    assert limits.refusal(5000) is None
    refusal = limits.refusal(5000.01)
    assert refusal is not None and "$5,000.01" in refusal and "$5,000.00 limit" in refusal


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0, -1.0])
def test_spending_limits_are_finite_amounts_above_zero(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        SpendingPolicy(second_approval_usd=bad)
    with pytest.raises(ValueError, match="finite"):
        SpendingPolicy(max_request_usd=bad)


def test_a_cost_that_is_not_a_number_needs_two_approvers_and_passes_no_cap() -> None:
    limits = SpendingPolicy(second_approval_usd=1000, max_request_usd=5000)
    assert limits.approvals_needed(float("nan")) == 2
    assert limits.refusal(float("nan")) is not None


@pytest.mark.parametrize(
    ("fee", "paid", "needed"),
    [
        (999.99, 0, 1),  # a purchase: its own amount
        (1000.01, 0, 2),
        (400, 600, 1),  # an extension: its fee, and the request's total after it
        (400, 600.01, 2),  # the total passes the amount though the fee does not
        (1000.01, 0.0, 2),
    ],
)
def test_one_policy_judges_a_purchase_and_an_extension(
    fee: float, paid: float, needed: int
) -> None:
    assert SpendingPolicy(second_approval_usd=1000).judge(fee, paid_before_usd=paid).approvals == (
        needed
    )


def test_an_extension_that_takes_the_total_above_the_cap_is_refused_and_says_so() -> None:
    policy = SpendingPolicy(max_request_usd=6000)
    assert policy.judge(1000, paid_before_usd=5000).refusal is None
    refusal = policy.judge(1661.18, paid_before_usd=4983.55).refusal
    assert refusal is not None
    assert "costs $1,661.18" in refusal and "$6,644.73 in all" in refusal
    assert "$6,000.00 limit" in refusal
