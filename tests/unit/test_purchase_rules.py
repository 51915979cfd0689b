from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import botocore.session
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.market import Offering, Origin, PriceSource, ReservationKind
from bot.domain.purchase import (
    BlockInUse,
    block_limit_refusal,
    client_token,
    lifecycle_state,
    offering_moved,
    plan_name,
    plan_name_prefix,
    purchase_tags,
    zone_client_token,
)
from bot.domain.records import CapacityRecord, PurchaseAttempt, Reservation
from tests.factories import NOW, make_record

START = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)
PLAN_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")


def offering(**kw: object) -> Offering:
    base: dict[str, object] = {
        "kind": ReservationKind.CAPACITY_BLOCK,
        "offering_id": "cb-0123",
        "instance_type": "p5.48xlarge",
        "count": 2,
        "start": START,
        "end": START + timedelta(days=3),
        "duration_hours": 72,
        "upfront_usd": 9967.10,
        "source": PriceSource(origin=Origin.SANDBOX, detail="test", as_of=NOW),
    }
    base.update(kw)
    return Offering.model_validate(base)


def test_a_record_carries_its_attempts_and_reservation_through_json() -> None:
    attempt = PurchaseAttempt(
        at=NOW,
        kind=OptionKind.CAPACITY_BLOCK,
        offering_id="cb-0123",
        account="research",
        region="us-east-1",
        approved_usd=9967.10,
        lease_until=NOW + timedelta(minutes=5),
        token="R1",
    )
    reservation = Reservation(
        kind=OptionKind.CAPACITY_BLOCK,
        id="cr-0abc",
        account="research",
        region="us-east-1",
        availability_zone="us-east-1a",
        instance_type="p5.48xlarge",
        instances=2,
        start=START,
        end=START + timedelta(days=3),
        fee_usd=9967.10,
        state="payment-pending",
    )
    record = make_record(attempts=(attempt,), reservation=reservation)
    again = CapacityRecord.model_validate_json(record.model_dump_json())
    assert again == record
    assert again.attempt == attempt
    assert make_record().reservation is None and make_record().attempt is None


@pytest.mark.parametrize(
    ("kind", "aws", "state"),
    [
        (OptionKind.CAPACITY_BLOCK, "payment-pending", State.PAYMENT_PENDING),
        (OptionKind.CAPACITY_BLOCK, "scheduled", State.SCHEDULED),
        (OptionKind.CAPACITY_BLOCK, "active", State.ACTIVE),
        (OptionKind.CAPACITY_BLOCK, "expired", State.EXPIRED),
        (OptionKind.CAPACITY_BLOCK, "payment-failed", State.FAILED),
        (OptionKind.ON_DEMAND_RESERVATION, "active", State.ACTIVE),
        (OptionKind.TRAINING_PLAN, "Pending", State.PAYMENT_PENDING),
        (OptionKind.TRAINING_PLAN, "Scheduled", State.SCHEDULED),
        (OptionKind.TRAINING_PLAN, "Active", State.ACTIVE),
        (OptionKind.TRAINING_PLAN, "Expired", State.EXPIRED),
        (OptionKind.TRAINING_PLAN, "Failed", State.FAILED),
        (OptionKind.TRAINING_PLAN, "active", None),  # SageMaker capitalises; EC2 does not
        (OptionKind.CAPACITY_BLOCK, "something-new", None),
    ],
)
def test_aws_states_map_onto_the_lifecycle(kind: OptionKind, aws: str, state: State | None) -> None:
    assert lifecycle_state(kind, aws) is state


def test_plan_names_are_valid_unique_per_attempt_and_share_a_prefix() -> None:
    names = {plan_name("gpu", "R12", n) for n in (1, 2)}
    assert len(names) == 2
    for name in names:
        assert PLAN_NAME.fullmatch(name), name
        assert name.startswith(plan_name_prefix("gpu"))
    odd = plan_name("team_a/prod--" + "x" * 80, "R123456", 99)
    assert PLAN_NAME.fullmatch(odd) and len(odd) <= 64
    assert plan_name("gpu", "R1", 1) != plan_name("gpu", "R11", 1)


def test_client_tokens_fit_ec2s_limit_and_differ_per_attempt() -> None:
    assert client_token("gpu", "R1", 1) != client_token("gpu", "R1", 2)
    assert len(client_token("n" * 100, "R1", 1)) <= 64


def test_each_zone_of_an_attempt_has_its_own_client_token() -> None:
    token = client_token("n" * 100, "R1", 1)
    east_b = zone_client_token(token, "us-east-1", "us-east-1b")
    assert east_b == f"{token}:b" and len(east_b) <= 64
    assert east_b != zone_client_token(token, "us-east-1", "us-east-1d")


def test_the_same_offering_at_the_approved_fee_may_be_bought() -> None:
    approved = offering()
    assert offering_moved(approved, 9967.10, offering()) is None
    assert offering_moved(approved, 9967.10, offering(upfront_usd=9000.0)) is None  # cheaper


def test_a_fee_rise_a_moved_window_or_a_vanished_offering_stops_the_purchase() -> None:
    approved = offering()
    assert "no longer offered" in (offering_moved(approved, 9967.10, None) or "")
    rise = offering_moved(approved, 9967.10, offering(upfront_usd=9967.12))
    assert rise == "the fee rose from $9,967.10 to $9,967.12"
    later = offering(start=START + timedelta(days=1), end=START + timedelta(days=4))
    assert "window moved" in (offering_moved(approved, 9967.10, later) or "")
    assert "1x" in (offering_moved(approved, 9967.10, offering(count=1)) or "")


def block(instances: int, state: str = "active", days: int = 1, account: str = "a") -> BlockInUse:
    return BlockInUse(
        account, f"cr-{account}-{instances}-{days}", instances, state, NOW + timedelta(days=days)
    )


def test_the_organisation_limit_at_255_256_257() -> None:
    in_use = [block(64, days=d, account=acct) for d, acct in ((1, "a"), (2, "b"), (3, "a"))]
    in_use.append(block(62, days=4, account="b"))  # 254 in use across two accounts
    assert block_limit_refusal(1, in_use) is None  # 255
    assert block_limit_refusal(2, in_use) is None  # 256
    refusal = block_limit_refusal(3, in_use)  # 257
    assert refusal is not None
    assert "254 of 256" in refusal
    assert f"{NOW + timedelta(days=1):%Y-%m-%d %H:%M}" in refusal


def test_only_pending_scheduled_and_active_blocks_count() -> None:
    gone = [
        block(64, state=s, days=d)
        for d, s in enumerate(
            ("expired", "payment-failed", "cancelled", "failed", "unavailable"), 1
        )
    ]
    assert block_limit_refusal(64, [*gone, block(192, "scheduled")]) is None
    assert block_limit_refusal(64, [*gone, block(193, "payment-pending")]) is not None


def test_a_block_holds_at_most_64_instances() -> None:
    assert block_limit_refusal(64, []) is None
    assert "at most 64" in (block_limit_refusal(65, []) or "")


_SESSION = botocore.session.get_session()
_MODELS = {name: _SESSION.get_service_model(name) for name in ("sagemaker", "ec2")}


@settings(max_examples=200, deadline=None)
@given(
    namespace=st.from_regex(r"[A-Za-z0-9_-]{1,40}", fullmatch=True),
    request=st.integers(min_value=1, max_value=10**9),
    attempt=st.integers(min_value=1, max_value=10**4),
    approvers=st.lists(st.from_regex(r"U[A-Z0-9]{8,11}", fullmatch=True), max_size=3),
)
def test_every_name_token_and_tag_the_bot_sends_fits_the_service_models(
    namespace: str, request: int, attempt: int, approvers: list[str]
) -> None:
    # Whatever GPU_BOT_NAMESPACE accepts, and Slack's user ids: the values go into
    # CreateTrainingPlan's name, CreateCapacityReservation's token, and the tags of every
    # purchase, which AWS's servers check against these patterns (the sandbox as well).
    from aws_sandbox.shapes import request_violations

    rid = f"R{request}"
    sagemaker, ec2 = _MODELS["sagemaker"], _MODELS["ec2"]
    tags = [
        {"Key": k, "Value": v} for k, v in purchase_tags(namespace, rid, "U0REQ", approvers).items()
    ]
    plan = {
        "TrainingPlanName": plan_name(namespace, rid, attempt),
        "TrainingPlanOfferingId": "tpo-x",
        "Tags": tags,
    }
    assert (
        request_violations(sagemaker.operation_model("CreateTrainingPlan").input_shape, plan) == []
    )
    token = client_token(namespace, rid, attempt)
    assert len(token) <= 64 and token.isascii()
    spec = [{"ResourceType": "capacity-reservation", "Tags": tags}]
    reservation = {
        "ClientToken": token,
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "InstanceCount": 1,
        "TagSpecifications": spec,
    }
    shape = ec2.operation_model("CreateCapacityReservation").input_shape
    assert request_violations(shape, reservation) == []
    # Distinct per attempt, and between namespaces that are not the same.
    assert plan_name(namespace, rid, attempt) != plan_name(namespace, rid, attempt + 1)
    assert client_token(namespace, rid, attempt) != client_token(namespace, rid, attempt + 1)
    assert plan_name(namespace, rid, attempt) != plan_name(namespace + "x", rid, attempt)
