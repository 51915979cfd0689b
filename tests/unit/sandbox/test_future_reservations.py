"""Future-dated Capacity Reservations in the sandbox, as EC2's API reference describes
them: asked 5 to 120 days ahead for C, M, R, I, T and G types of at least 32 vCPUs,
assessed, then scheduled (active from the start date) or unsupported."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from tests.unit.sandbox.conftest import DAY, NOW

H = timedelta(hours=1)


@pytest.fixture
def ec2(market: SandboxMarket) -> Any:
    return sandbox_clients(market, "us-east-1").ec2


def ask(ec2: Any, instance_type: str = "g6e.12xlarge", count: int = 1, **over: Any) -> Any:
    params: dict[str, Any] = {
        "InstanceType": instance_type,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1b",
        "InstanceCount": count,
        "StartDate": NOW + 30 * DAY,
        "CommitmentDuration": int((3 * DAY).total_seconds()),
        "DeliveryPreference": "incremental",
        "EndDateType": "limited",
        "EndDate": NOW + 33 * DAY,
        "InstanceMatchCriteria": "targeted",
    }
    return ec2.create_capacity_reservation(**(params | over))["CapacityReservation"]


def state(ec2: Any, reservation_id: str) -> str:
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    return str(found["CapacityReservations"][0]["State"])


def code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_assessed_then_scheduled_then_active_from_its_start(ec2: Any, clock: ManualClock) -> None:
    made = ask(ec2)
    assert made["State"] == "assessing" and made["StartDate"] == NOW + 30 * DAY
    assert made["CommitmentInfo"]["CommitmentEndDate"] == NOW + 33 * DAY
    clock.set(NOW + 2 * H)
    assert state(ec2, made["CapacityReservationId"]) == "scheduled"
    clock.set(NOW + 30 * DAY)
    assert state(ec2, made["CapacityReservationId"]) == "active"


def test_a_declined_one_is_unsupported_after_its_assessment(
    ec2: Any, market: SandboxMarket, clock: ManualClock
) -> None:
    market.conditions.future_reservations_declined = True
    made = ask(ec2)
    assert made["State"] == "assessing"
    clock.set(NOW + 2 * H)
    assert state(ec2, made["CapacityReservationId"]) == "unsupported"
    clock.set(NOW + 30 * DAY)
    assert state(ec2, made["CapacityReservationId"]) == "unsupported"


def test_p_and_trn_types_are_not_reserved_ahead(ec2: Any) -> None:
    for kind in ("p5.48xlarge", "trn1.32xlarge"):
        with pytest.raises(ClientError) as exc:
            ask(ec2, kind, AvailabilityZone="us-east-1b")
        assert code(exc) == "Unsupported"


@pytest.mark.parametrize(
    "over",
    [
        {"StartDate": NOW + 4 * DAY, "EndDate": NOW + 8 * DAY},  # under 5 days ahead
        {"StartDate": NOW + 121 * DAY, "EndDate": NOW + 125 * DAY},  # over 120
        {"DeliveryPreference": "fixed"},
        {"EndDate": NOW + 32 * DAY},  # inside the commitment
    ],
)
def test_refused_outside_what_the_api_reference_allows(ec2: Any, over: dict[str, Any]) -> None:
    with pytest.raises(ClientError) as exc:
        ask(ec2, **over)
    assert code(exc) == "InvalidParameterValue"


def test_at_least_32_vcpus_and_both_future_parameters(ec2: Any) -> None:
    with pytest.raises(ClientError) as exc:
        ask(ec2, "g5.xlarge", count=7)  # 28 vCPUs
    assert code(exc) == "InvalidParameterValue"
    assert ask(ec2, "g5.xlarge", count=8)["State"] == "assessing"  # 32
    with pytest.raises(ClientError) as exc:
        ec2.create_capacity_reservation(
            InstanceType="g5.12xlarge",
            InstancePlatform="Linux/UNIX",
            AvailabilityZone="us-east-1b",
            InstanceCount=1,
            StartDate=NOW + 30 * DAY,
            DeliveryPreference="incremental",
        )
    assert code(exc) == "MissingParameter"


def test_not_cancelled_before_its_commitment_ends(ec2: Any, clock: ManualClock) -> None:
    made = ask(ec2)["CapacityReservationId"]
    clock.set(NOW + 31 * DAY)
    with pytest.raises(ClientError) as exc:
        ec2.cancel_capacity_reservation(CapacityReservationId=made)
    assert code(exc) == "InvalidCapacityReservationState"
    clock.set(NOW + 33 * DAY)
    assert ec2.cancel_capacity_reservation(CapacityReservationId=made)["Return"] is True
