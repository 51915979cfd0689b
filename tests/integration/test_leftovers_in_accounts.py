"""What the cleanup prompt finds and deletes is looked for in the account the capacity
was bought in, and an On-Demand Capacity Reservation still billing is cancelled (the
sandbox answers CancelCapacityReservation as EC2 does)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bot.adapters.aws.aftercare import REQUEST_TAG, AwsAftercare
from bot.domain.catalog import default_catalog
from bot.domain.cleanup import LeftoverKind
from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.purchase import TAG_NAMESPACE
from bot.domain.records import CapacityRecord, Reservation
from tests.factories import make_record
from tests.slack_harness import BotUnderTest

RESEARCH_ROLE = "arn:aws:iam::111122223333:role/gpu-bot"


def _odcr(bot: BotUnderTest, account: str, request_id: str) -> dict[str, Any]:
    """An open-ended reservation, tagged for the request as the purchase flow tags it: it
    bills until cancelled."""
    ec2 = bot.services.accounts.clients(account, "us-east-1").ec2  # type: ignore[attr-defined]
    return dict(
        ec2.create_capacity_reservation(
            InstanceType="p5.48xlarge",
            InstancePlatform="Linux/UNIX",
            AvailabilityZone="us-east-1b",
            InstanceCount=2,
            EndDateType="unlimited",
            TagSpecifications=[
                {
                    "ResourceType": "capacity-reservation",
                    "Tags": [
                        {"Key": REQUEST_TAG, "Value": request_id},
                        {"Key": TAG_NAMESPACE, "Value": bot.settings.namespace},
                    ],
                }
            ],
        )["CapacityReservation"]
    )


def _ended(bot: BotUnderTest, cr: dict[str, Any], account: str) -> CapacityRecord:
    now = bot.clock.now()
    reservation = Reservation(
        kind=OptionKind.ON_DEMAND_RESERVATION,
        id=cr["CapacityReservationId"],
        account=account,
        region="us-east-1",
        availability_zone="us-east-1b",
        instance_type="p5.48xlarge",
        instances=2,
        start=now - timedelta(days=3),
        end=now - timedelta(hours=1),
        state="active",
    )
    return make_record("R1", state=State.EXPIRED, reservation=reservation)


def _states(bot: BotUnderTest, account: str, cr_id: str) -> list[str]:
    ec2 = bot.services.accounts.clients(account, "us-east-1").ec2  # type: ignore[attr-defined]
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[cr_id])
    return [r["State"] for r in found["CapacityReservations"]]


def test_a_reservation_in_another_account_is_found_and_cancelled_there(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(accounts={"research": RESEARCH_ROLE})
    cr = _odcr(bot, "research", "R1")
    record = _ended(bot, cr, "research")
    with pytest.raises(ClientError, match=r"InvalidCapacityReservationId\.NotFound"):
        _states(bot, "default", cr["CapacityReservationId"])  # not in the bot's own account
    aftercare = AwsAftercare(bot.services.accounts, default_catalog(), bot.clock)  # type: ignore[arg-type]

    found = aftercare.find(record)
    (billing,) = [i for i in found.items if i.kind is LeftoverKind.CAPACITY_RESERVATION]
    assert billing.id == cr["CapacityReservationId"]
    assert billing.usd_per_hour and billing.usd_per_hour > 0  # two unused p5.48xlarge

    aftercare.delete(record, found.items)
    assert _states(bot, "research", cr["CapacityReservationId"]) == ["cancelled"]
    assert aftercare.find(record).empty
    aftercare.delete(record, [billing])  # cancelling again changes nothing
    assert _states(bot, "research", cr["CapacityReservationId"]) == ["cancelled"]


def test_cancelling_an_unknown_reservation_is_refused_as_ec2_does(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    ec2 = bot.services.accounts.clients(None, "us-east-1").ec2  # type: ignore[attr-defined]
    with pytest.raises(ClientError, match=r"InvalidCapacityReservationId\.NotFound"):
        ec2.cancel_capacity_reservation(CapacityReservationId="cr-0123456789abcdef0")
    cr = _odcr(bot, "default", "R2")
    with pytest.raises(ClientError, match="DryRunOperation"):
        ec2.cancel_capacity_reservation(
            CapacityReservationId=cr["CapacityReservationId"], DryRun=True
        )
    assert _states(bot, "default", cr["CapacityReservationId"]) == ["active"]
