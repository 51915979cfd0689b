"""DescribeCapacityBlockExtensionOfferings is paginated: the sandbox may answer an empty
page with a NextToken, and the bot reads every page before saying nothing is offered."""

from __future__ import annotations

from aws_sandbox import SandboxMarket
from bot.adapters.aws.aftercare import AwsAftercare
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import default_catalog
from bot.domain.comparison import OptionKind
from bot.domain.records import Reservation
from tests.unit.sandbox.test_cleanup_gone import _OneAccount
from tests.unit.sandbox.test_extensions import bought_block

OPERATION = "DescribeCapacityBlockExtensionOfferings"


def test_the_sandbox_can_answer_an_empty_page_with_a_next_token(
    market: SandboxMarket, clock: ManualClock
) -> None:
    ec2, reservation = bought_block(market, clock)
    market.conditions.empty_pages(OPERATION, 2)
    asked = {
        "CapacityReservationId": reservation["CapacityReservationId"],
        "CapacityBlockExtensionDurationHours": 24,
    }
    first = ec2.describe_capacity_block_extension_offerings(**asked)
    assert first["CapacityBlockExtensionOfferings"] == []
    second = ec2.describe_capacity_block_extension_offerings(**asked, NextToken=first["NextToken"])
    assert second["CapacityBlockExtensionOfferings"] == []
    third = ec2.describe_capacity_block_extension_offerings(**asked, NextToken=second["NextToken"])
    assert len(third["CapacityBlockExtensionOfferings"]) == 1
    assert "NextToken" not in third


def test_an_extension_offer_behind_empty_pages_is_found(
    market: SandboxMarket, clock: ManualClock
) -> None:
    _, bought = bought_block(market, clock)
    reservation = Reservation(
        kind=OptionKind.CAPACITY_BLOCK,
        id=bought["CapacityReservationId"],
        region="us-east-1",
        instance_type=bought["InstanceType"],
        instances=bought["TotalInstanceCount"],
        start=bought["StartDate"],
        end=bought["EndDate"],
        state=bought["State"],
    )
    aftercare = AwsAftercare(
        _OneAccount(sandbox_clients(market, "us-east-1")),  # type: ignore[arg-type]
        default_catalog(),
        clock,
    )
    market.conditions.empty_pages(OPERATION, 2)
    offer = aftercare.extension_offer(reservation, 24)
    assert offer is not None
    assert offer.end == bought["EndDate"] + (offer.end - offer.start)
    assert offer.start == bought["EndDate"]
