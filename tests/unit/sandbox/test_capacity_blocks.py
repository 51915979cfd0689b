"""The sandbox's EC2 Capacity Blocks, through a real boto3 EC2 client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from aws_sandbox import SandboxMarket
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.offering_rules import capacity_block_duration_valid
from tests.unit.sandbox.conftest import DAY, NOW


def ec2_client(market: SandboxMarket, region: str = "us-east-1") -> Any:
    return sandbox_clients(market, region).ec2


@pytest.fixture(scope="module")
def shared() -> Any:
    """A client on a market nobody buys from or moves: for offering searches only."""
    return ec2_client(SandboxMarket(ManualClock(NOW)))


@pytest.fixture
def ec2(market: SandboxMarket) -> Any:
    return ec2_client(market)


def offerings(client: Any, **params: Any) -> list[dict[str, Any]]:
    defaults = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 48}
    params = {k: v for k, v in (defaults | params).items() if v is not None}
    result: list[dict[str, Any]] = client.describe_capacity_block_offerings(**params)[
        "CapacityBlockOfferings"
    ]
    return result


def error_of(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = exc.value.response["Error"]
    return error["Code"], error["Message"]


def buy(client: Any, offer: dict[str, Any], request_id: str = "req-1", **params: Any) -> Any:
    return client.purchase_capacity_block(
        CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
        InstancePlatform="Linux/UNIX",
        TagSpecifications=[
            {"ResourceType": kind, "Tags": [{"Key": "gpu-bot:request-id", "Value": request_id}]}
            for kind in ("capacity-reservation", "capacity-block")
        ],
        **params,
    )


# --- durations, counts, dates ---------------------------------------------------------


@pytest.mark.parametrize("days", [1, 13, 14, 21, 28, 175, 182])
def test_valid_durations_find_offerings(shared: Any, days: int) -> None:
    found = offerings(shared, CapacityDurationHours=days * 24)
    assert found
    assert all(o["EndDate"] - o["StartDate"] == timedelta(days=days) for o in found)


@pytest.mark.parametrize("hours", [15 * 24, 16 * 24, 20 * 24, 22 * 24, 189 * 24, 25, 12])
def test_invalid_durations_are_refused_like_aws(shared: Any, hours: int) -> None:
    with pytest.raises(ClientError) as exc:
        offerings(shared, CapacityDurationHours=hours)
    code, message = error_of(exc)
    assert code == "InvalidParameterValue"
    assert f"({hours} hours)" in message and "7-day increments up to 182 days" in message


@settings(max_examples=40, deadline=None)
@given(hours=st.integers(min_value=1, max_value=200 * 24))
def test_any_duration_is_accepted_exactly_when_the_rule_says(shared: Any, hours: int) -> None:
    try:
        offerings(shared, CapacityDurationHours=hours)
        accepted = True
    except ClientError:
        accepted = False
    assert accepted is (hours in ACCEPTED_HOURS)


# AWS's table written out, not computed by the rule under test: 1-14 days in 1-day steps,
# then 21, 28, ... 182 days (7-day steps).
ACCEPTED_HOURS = frozenset(
    [24 * d for d in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)]
    + [24 * d for d in (21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98, 105, 112, 119)]
    + [24 * d for d in (126, 133, 140, 147, 154, 161, 168, 175, 182)]
)


def test_the_duration_rule_agrees_with_the_table() -> None:
    assert {h for h in range(1, 200 * 24) if capacity_block_duration_valid(h)} == ACCEPTED_HOURS


def test_up_to_64_instances_per_block(shared: Any) -> None:
    assert offerings(shared, InstanceCount=64)[0]["InstanceCount"] == 64
    for count in (65, 0):
        with pytest.raises(ClientError) as exc:
            offerings(shared, InstanceCount=count)
        assert error_of(exc)[0] == "InvalidParameterValue"


def test_instance_count_is_required(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        shared.describe_capacity_block_offerings(
            InstanceType="p5.48xlarge", CapacityDurationHours=24
        )
    assert error_of(exc)[0] == "MissingParameter"


def test_start_exactly_eight_weeks_ahead_is_the_last_one_offered(shared: Any) -> None:
    limit = NOW + timedelta(weeks=8)
    found = offerings(shared, StartDateRange=limit)
    assert [o["StartDate"] for o in found] == [limit]
    with pytest.raises(ClientError) as exc:
        offerings(shared, StartDateRange=limit + timedelta(minutes=1))
    code, message = error_of(exc)
    assert code == "InvalidParameterValue" and "8 weeks" in message


def test_blocks_end_at_1130_utc_and_an_early_start_carries_its_minutes() -> None:
    clock = ManualClock(datetime(2026, 3, 2, 9, 40, tzinfo=UTC))
    found = offerings(ec2_client(SandboxMarket(clock)))
    first = found[0]
    # As soon as possible: the next half hour, ending 11:30 UTC on the date 48 h later.
    assert first["StartDate"] == datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    assert first["EndDate"] == datetime(2026, 3, 4, 11, 30, tzinfo=UTC)
    assert (first["CapacityBlockDurationHours"], first["CapacityBlockDurationMinutes"]) == (49, 30)
    for o in found:
        assert (o["EndDate"].hour, o["EndDate"].minute) == (11, 30)
    for o in found[1:]:
        assert (o["StartDate"].hour, o["StartDate"].minute) == (11, 30)
        assert (o["CapacityBlockDurationHours"], o["CapacityBlockDurationMinutes"]) == (48, 0)


def test_six_offerings_at_most_one_per_start_day_earliest_first(shared: Any) -> None:
    found = offerings(shared)
    starts = [o["StartDate"] for o in found]
    assert len(found) == 6
    assert starts == sorted(starts) and len({s.date() for s in starts}) == 6
    assert starts[0] == NOW
    assert {o["AvailabilityZone"] for o in found} <= {f"us-east-1{z}" for z in "abcdef"}
    assert all(o["CurrencyCode"] == "USD" and o["Tenancy"] == "default" for o in found)


def test_start_and_end_date_ranges_bound_the_offerings(shared: Any) -> None:
    start = NOW + 10 * DAY
    found = offerings(shared, StartDateRange=start, EndDateRange=start + 4 * DAY)
    assert [o["StartDate"] for o in found] == [start, start + DAY, start + 2 * DAY]
    assert offerings(shared, StartDateRange=start, EndDateRange=start + DAY) == []
    with pytest.raises(ClientError) as exc:
        offerings(shared, StartDateRange=start, EndDateRange=start - DAY)
    assert error_of(exc)[0] == "InvalidParameterValue"


def test_upfront_fee_is_catalog_price_times_hours_times_count(shared: Any) -> None:
    # p5.48xlarge in us-east-1: 34.608 USD per instance-hour (the catalog's newest figure).
    assert offerings(shared)[0]["UpfrontFee"] == "3322.37"  # 34.608 x 48 h x 2


@pytest.mark.parametrize(
    ("instance_type", "region"),
    [("g5.48xlarge", "us-east-1"), ("m5.large", "us-east-1"), ("p5e.48xlarge", "us-east-1")],
)
def test_types_capacity_blocks_do_not_offer_find_nothing(instance_type: str, region: str) -> None:
    client = ec2_client(SandboxMarket(ManualClock(NOW)), region)
    assert offerings(client, InstanceType=instance_type) == []


def test_region_without_the_type_finds_nothing_and_with_it_finds_some() -> None:
    market = SandboxMarket(ManualClock(NOW))
    assert offerings(ec2_client(market, "us-east-2"), InstanceType="p5e.48xlarge")
    assert offerings(ec2_client(market, "sa-east-1")) == []


def test_instance_type_preferences(shared: Any) -> None:
    found = offerings(
        shared,
        InstanceType=None,
        InstanceTypePreferences=[
            {"InstanceType": "p5.48xlarge"},
            {"InstanceType": "p5en.48xlarge"},
        ],
    )
    assert [o["InstanceType"] for o in found[:2]] == ["p5.48xlarge", "p5en.48xlarge"]
    assert found[0]["StartDate"] == found[1]["StartDate"]


def test_instance_type_and_preferences_together_or_neither_are_refused(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        offerings(shared, InstanceTypePreferences=[{"InstanceType": "p5.48xlarge"}])
    assert error_of(exc)[0] == "InvalidParameterCombination"
    with pytest.raises(ClientError) as exc:
        shared.describe_capacity_block_offerings(InstanceCount=1, CapacityDurationHours=24)
    assert error_of(exc)[0] == "MissingParameter"


# --- pagination -----------------------------------------------------------------------


def test_pagination_with_max_results_and_next_token(shared: Any) -> None:
    base = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 48}
    first = shared.describe_capacity_block_offerings(**base, MaxResults=4)
    assert len(first["CapacityBlockOfferings"]) == 4 and first["NextToken"]
    second = shared.describe_capacity_block_offerings(
        **base, MaxResults=4, NextToken=first["NextToken"]
    )
    assert len(second["CapacityBlockOfferings"]) == 2 and "NextToken" not in second
    pages = shared.get_paginator("describe_capacity_block_offerings").paginate(
        **base, PaginationConfig={"PageSize": 1}
    )
    paged = [o["CapacityBlockOfferingId"] for page in pages for o in page["CapacityBlockOfferings"]]
    assert paged == [o["CapacityBlockOfferingId"] for o in offerings(shared)]


def test_a_garbled_or_foreign_token_is_refused(shared: Any) -> None:
    base = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 48}
    token = shared.describe_capacity_block_offerings(**base, MaxResults=1)["NextToken"]
    for bad, params in [("garbage!", base), (token, base | {"InstanceCount": 4})]:
        with pytest.raises(ClientError) as exc:
            shared.describe_capacity_block_offerings(**params, NextToken=bad)
        code, message = error_of(exc)
        assert code == "InvalidParameterValue" and "nextToken" in message


def test_max_results_above_the_model_maximum_is_refused_server_side(shared: Any) -> None:
    with pytest.raises(ClientError) as exc:
        offerings(shared, MaxResults=1001)
    code, message = error_of(exc)
    assert code == "InvalidParameterValue" and "maxResults" in message


# --- dry run and purchase -------------------------------------------------------------


def test_dry_run_answers_dry_run_operation(ec2: Any) -> None:
    with pytest.raises(ClientError) as exc:
        offerings(ec2, DryRun=True)
    assert error_of(exc)[0] == "DryRunOperation"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    offer = offerings(ec2)[0]
    with pytest.raises(ClientError) as exc:
        buy(ec2, offer, DryRun=True)
    assert error_of(exc)[0] == "DryRunOperation"
    assert ec2.describe_capacity_blocks()["CapacityBlocks"] == []


def test_purchase_returns_the_reservation_and_the_block(ec2: Any) -> None:
    offer = offerings(ec2)[1]
    bought = buy(ec2, offer)
    reservation = bought["CapacityReservation"]
    assert bought["CapacityReservations"] == [reservation]
    (block,) = bought["CapacityBlocks"]
    assert reservation["State"] == block["State"] == "payment-pending"
    assert reservation["ReservationType"] == "capacity-block"
    assert reservation["CapacityBlockId"] == block["CapacityBlockId"]
    assert block["CapacityReservationIds"] == [reservation["CapacityReservationId"]]
    assert reservation["CapacityReservationId"].startswith("cr-")
    assert (reservation["StartDate"], reservation["EndDate"]) == (
        offer["StartDate"],
        offer["EndDate"],
    )
    assert reservation["AvailabilityZone"] == offer["AvailabilityZone"]
    assert reservation["TotalInstanceCount"] == 2 and reservation["AvailableInstanceCount"] == 0
    assert reservation["Tags"] == [{"Key": "gpu-bot:request-id", "Value": "req-1"}]


def test_lifecycle_follows_the_clock(ec2: Any, clock: ManualClock) -> None:
    offer = offerings(ec2)[2]
    buy(ec2, offer)

    def states() -> tuple[str, str]:
        (block,) = ec2.describe_capacity_blocks()["CapacityBlocks"]
        (reservation,) = ec2.describe_capacity_reservations()["CapacityReservations"]
        return block["State"], reservation["State"]

    assert states() == ("payment-pending", "payment-pending")
    clock.advance(timedelta(minutes=2))  # the default payment delay
    assert states() == ("scheduled", "scheduled")
    clock.set(offer["StartDate"])
    assert states() == ("active", "active")
    (reservation,) = ec2.describe_capacity_reservations()["CapacityReservations"]
    assert reservation["AvailableInstanceCount"] == 2
    clock.set(offer["EndDate"] - timedelta(seconds=1))
    assert states() == ("active", "active")
    clock.set(offer["EndDate"])
    assert states() == ("expired", "expired")


def test_payment_delay_is_configurable_and_payments_can_fail(clock: ManualClock) -> None:
    market = SandboxMarket(clock, payment_delay=timedelta(hours=1))
    ec2 = ec2_client(market)
    buy(ec2, offerings(ec2)[3], "paid")
    market.conditions.payments_fail = True
    buy(ec2, offerings(ec2)[3], "unpaid")
    clock.advance(timedelta(minutes=59))
    assert {b["State"] for b in ec2.describe_capacity_blocks()["CapacityBlocks"]} == {
        "payment-pending"
    }
    clock.advance(timedelta(minutes=1))
    states = {
        b["Tags"][0]["Value"]: b["State"] for b in ec2.describe_capacity_blocks()["CapacityBlocks"]
    }
    assert states == {"paid": "scheduled", "unpaid": "payment-failed"}


def test_a_garbled_or_foreign_offering_id_is_refused(ec2: Any, market: SandboxMarket) -> None:
    good = offerings(ec2)[0]["CapacityBlockOfferingId"]
    tampered = good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb")
    foreign = offerings(ec2_client(market, "us-west-2"))[0]["CapacityBlockOfferingId"]
    for bad in ("cb-0123456789abcdefg", tampered, "xyz", foreign):
        with pytest.raises(ClientError) as exc:
            ec2.purchase_capacity_block(CapacityBlockOfferingId=bad, InstancePlatform="Linux/UNIX")
        code, message = error_of(exc)
        assert code == "InvalidParameterValue" and bad in message


def test_an_offering_whose_start_has_passed_cannot_be_bought(ec2: Any, clock: ManualClock) -> None:
    offer = offerings(ec2)[1]
    clock.set(offer["StartDate"] + timedelta(minutes=1))
    with pytest.raises(ClientError) as exc:
        buy(ec2, offer)
    assert error_of(exc)[0] == "InsufficientInstanceCapacity"


def test_an_offering_id_is_enough_to_buy_from_another_market(clock: ManualClock) -> None:
    quoted = offerings(ec2_client(SandboxMarket(clock)))[0]
    other = ec2_client(SandboxMarket(clock))  # another process: nothing shared but the id
    bought = buy(other, quoted)["CapacityReservation"]
    assert bought["InstanceType"] == "p5.48xlarge" and bought["StartDate"] == quoted["StartDate"]


def test_only_capacity_reservation_and_capacity_block_can_be_tagged(ec2: Any) -> None:
    with pytest.raises(ClientError) as exc:
        ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offerings(ec2)[0]["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "a", "Value": "b"}]}],
        )
    assert error_of(exc)[0] == "InvalidParameterValue"


def test_instance_platform_outside_the_model_enum_is_refused(ec2: Any) -> None:
    with pytest.raises(ClientError) as exc:
        ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offerings(ec2)[0]["CapacityBlockOfferingId"],
            InstancePlatform="Plan 9",
        )
    code, message = error_of(exc)
    assert code == "InvalidParameterValue" and "instancePlatform" in message


# --- describing what was bought -------------------------------------------------------


def test_state_date_and_type_filters(ec2: Any, clock: ManualClock) -> None:
    found = offerings(ec2)
    buy(ec2, found[0], "req-a")
    buy(ec2, found[4], "req-b")
    clock.set(found[0]["StartDate"] + timedelta(minutes=5))

    def blocks(*filters: dict[str, Any]) -> list[str]:
        answer = ec2.describe_capacity_blocks(Filters=list(filters))["CapacityBlocks"]
        return sorted(b["Tags"][0]["Value"] for b in answer)

    assert blocks({"Name": "state", "Values": ["scheduled"]}) == ["req-b"]
    assert blocks({"Name": "state", "Values": ["active", "scheduled"]}) == ["req-a", "req-b"]
    reservations = ec2.describe_capacity_reservations(
        Filters=[
            {"Name": "state", "Values": ["scheduled"]},
            {"Name": "instance-type", "Values": ["p5.48xlarge"]},
        ]
    )["CapacityReservations"]
    assert [r["Tags"][0]["Value"] for r in reservations] == ["req-b"]
    day = found[4]["StartDate"].strftime("%Y-%m-%d")
    assert blocks({"Name": "start-date", "Values": [f"{day}*"]}) == ["req-b"]
    with pytest.raises(ClientError) as exc:
        ec2.describe_capacity_blocks(Filters=[{"Name": "colour", "Values": ["blue"]}])
    assert error_of(exc) == ("InvalidParameterValue", "The filter 'colour' is invalid")


@pytest.mark.parametrize("name", ["tag:gpu-bot:request-id", "tag-key", "tag-value"])
def test_tag_filters_neither_call_documents_are_refused(ec2: Any, name: str) -> None:
    buy(ec2, offerings(ec2)[0], "req-a")
    for call in (ec2.describe_capacity_reservations, ec2.describe_capacity_blocks):
        with pytest.raises(ClientError) as exc:
            call(Filters=[{"Name": name, "Values": ["req-a"]}])
        assert error_of(exc) == ("InvalidParameterValue", f"The filter '{name}' is invalid")


def test_describe_by_id_and_unknown_ids(ec2: Any) -> None:
    bought = buy(ec2, offerings(ec2)[0])
    block_id = bought["CapacityBlocks"][0]["CapacityBlockId"]
    reservation_id = bought["CapacityReservation"]["CapacityReservationId"]
    assert ec2.describe_capacity_blocks(CapacityBlockIds=[block_id])["CapacityBlocks"]
    assert ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])[
        "CapacityReservations"
    ]
    with pytest.raises(ClientError) as exc:
        ec2.describe_capacity_reservations(CapacityReservationIds=["cr-00000000000000000"])
    assert error_of(exc)[0] == "InvalidCapacityReservationId.NotFound"
    with pytest.raises(ClientError) as exc:
        ec2.describe_capacity_blocks(CapacityBlockIds=["cb-00000000000000000"])
    assert error_of(exc)[0] == "InvalidCapacityBlockId.NotFound"


def test_purchases_are_listed_in_their_region_only(ec2: Any, market: SandboxMarket) -> None:
    buy(ec2, offerings(ec2)[0])
    assert ec2_client(market, "us-west-2").describe_capacity_blocks()["CapacityBlocks"] == []


def test_describe_blocks_paginates(ec2: Any) -> None:
    for i, offer in enumerate(offerings(ec2)[:3]):
        buy(ec2, offer, f"req-{i}")
    pages = ec2.get_paginator("describe_capacity_blocks").paginate(PaginationConfig={"PageSize": 2})
    sizes = [len(page["CapacityBlocks"]) for page in pages]
    assert sizes == [2, 1]
