"""An extension's steps as pure functions: one open extension at a time, decided by an
allowed approver, bought at most once, and never applied to a newer extension."""

from __future__ import annotations

from datetime import timedelta

from bot.domain import events as on
from bot.domain import extension_steps as steps
from bot.domain.buy_once import ATTEMPT_LEASE
from bot.domain.comparison import OptionKind
from bot.domain.decisions import Outcome
from bot.domain.extension import ExtensionOffer, ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Reservation
from tests.factories import NOW, make_record

REQUESTER, APPROVER, APPROVER_2 = "U0REQUESTER", "U0APPROVER", "U0APPROVER2"
END = NOW + timedelta(days=3)
OFFER = ExtensionOffer(
    offering_id="cbx-1", hours=24, start=END, end=END + timedelta(days=1), fee_usd=1661.18
)
HELD = Reservation(
    kind=OptionKind.CAPACITY_BLOCK,
    id="cr-1",
    region="us-east-1",
    instance_type="p5.48xlarge",
    instances=2,
    start=NOW,
    end=END,
    fee_usd=4983.55,
    state="active",
)


def asked(approvals: int = 1) -> CapacityRecord:
    record = make_record(state=State.ACTIVE, reservation=HELD, extended_usd=100.0)
    step = steps.asked(record, OFFER, REQUESTER, NOW, approvals, 4983.55, None)
    assert step is not None and isinstance(step.event, on.ExtensionAsked)
    return step.record


def approved() -> CapacityRecord:
    decision = steps.decided(asked(), 1, APPROVER, True, True, "", NOW)
    assert decision.step is not None
    return decision.step.record


def buying() -> CapacityRecord:
    step = steps.purchase_started(approved(), 1, NOW)
    assert step is not None
    return step.record


def test_one_extension_is_open_at_a_time_and_the_next_is_numbered_after_it() -> None:
    record = asked()
    assert record.extension is not None and record.extension.number == 1
    assert steps.asked(record, OFFER, REQUESTER, NOW, 1, 0.0, None) is None
    failed = steps.purchase_failed(buying(), 1, "offer gone")
    assert failed is not None
    again = steps.asked(failed.record, OFFER, REQUESTER, NOW, 1, 0.0, None)
    assert again is not None and again.record.extension is not None
    assert again.record.extension.number == 2


def test_the_requester_cannot_decide_and_an_approver_decides_once() -> None:
    own = steps.decided(asked(), 1, REQUESTER, True, True, "", NOW)
    assert own.step is None and own.refusal is not None and "your own" in own.refusal
    first = steps.decided(asked(2), 1, APPROVER, True, True, "", NOW)
    assert first.outcome is Outcome.PARTIAL and first.step is not None
    assert isinstance(first.step.event, on.ExtensionApprovalRecorded)
    again = steps.decided(first.step.record, 1, APPROVER, True, True, "", NOW)
    assert again.step is None and again.refusal is not None and "already" in again.refusal
    second = steps.decided(first.step.record, 1, APPROVER_2, True, True, "", NOW)
    assert second.outcome is Outcome.APPROVED and second.step is not None
    assert isinstance(second.step.event, on.ExtensionApproved)


def test_a_decision_on_a_replaced_extension_is_refused() -> None:
    decision = steps.decided(asked(), 2, APPROVER, True, False, "no", NOW)
    assert decision.step is None and decision.refusal == (
        "That extension of R1 was replaced by a newer one."
    )


def test_a_rejection_keeps_the_reason_and_ends_it() -> None:
    decision = steps.decided(asked(), 1, APPROVER, True, False, "too dear", NOW)
    assert decision.step is not None and isinstance(decision.step.event, on.ExtensionRejected)
    ext = decision.step.record.extension
    assert ext is not None and ext.status is ExtensionStatus.REJECTED and ext.reason == "too dear"


def test_one_worker_claims_the_purchase_with_a_lease() -> None:
    record = buying()
    ext = record.extension
    assert ext is not None and ext.status is ExtensionStatus.PURCHASING
    assert ext.lease_until == NOW + ATTEMPT_LEASE
    assert steps.purchase_started(record, 1, NOW) is None  # the second worker


def test_bought_adds_the_fee_once_and_takes_aws_reservation() -> None:
    longer = HELD.model_copy(update={"end": OFFER.end, "fee_usd": 4983.55 + OFFER.fee_usd})
    step = steps.bought(buying(), 1, longer)
    assert step is not None and isinstance(step.event, on.ExtensionBought)
    assert step.record.extended_usd == round(100.0 + OFFER.fee_usd, 2)
    assert step.record.reservation == longer
    assert steps.bought(step.record, 1, longer) is None  # a job run again adds nothing


def test_an_unknown_outcome_can_be_found_later_but_not_failed() -> None:
    unknown = steps.outcome_unknown(buying(), 1)
    assert unknown is not None and unknown.record.extension is not None
    assert unknown.record.extension.reason == steps.UNKNOWN_SAID
    assert steps.purchase_failed(unknown.record, 1, "x") is None
    assert steps.bought(unknown.record, 1, HELD) is not None


def test_the_card_is_remembered_on_its_own_extension_only() -> None:
    step = steps.card_posted(asked(), 1, "C0APPROVALS", "1.5")
    assert step is not None and step.record.extension is not None
    assert (step.record.extension.card_channel, step.record.extension.card_ts) == (
        "C0APPROVALS",
        "1.5",
    )
    assert steps.card_posted(asked(), 2, "C0APPROVALS", "1.5") is None


def test_only_an_unknown_extension_can_be_marked_failed_and_that_frees_the_next() -> None:
    assert steps.marked_failed(buying(), 1) is None  # its call may still answer
    unknown = steps.outcome_unknown(buying(), 1)
    assert unknown is not None
    failed = steps.marked_failed(unknown.record, 1)
    assert failed is not None and isinstance(failed.event, on.ExtensionFailed)
    assert failed.record.extension is not None
    assert failed.record.extension.reason == steps.MARKED_FAILED
    assert steps.marked_failed(failed.record, 1) is None
    assert steps.asked(failed.record, OFFER, REQUESTER, NOW, 1, 0.0, None) is not None


def test_no_extension_when_even_a_day_would_pass_the_limit_for_one_request() -> None:
    from datetime import timedelta

    from bot.domain.approval import SpendingPolicy
    from bot.domain.extension import beyond_the_limit
    from tests.factories import NOW

    day = ExtensionOffer(
        offering_id="o", hours=24, start=NOW, end=NOW + timedelta(days=1), fee_usd=1661.18
    )
    assert beyond_the_limit(day, 4983.55, SpendingPolicy()) is None
    assert beyond_the_limit(day, 4983.55, SpendingPolicy(max_request_usd=7000)) is None
    why = beyond_the_limit(day, 4983.55, SpendingPolicy(max_request_usd=6000))
    assert why is not None and "$6,644.73 in all, above the $6,000.00 limit" in why
