"""The sandbox's Spot price history and Pricing API, through real boto3 clients."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.market import AwsClients
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import PriceKind, default_catalog

NOW = datetime(2026, 3, 2, 11, 47, tzinfo=UTC)
catalog = default_catalog()
EC2_LINUX = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "marketoption": "OnDemand",
}


@pytest.fixture(scope="module")
def clients() -> AwsClients:
    return sandbox_clients(SandboxMarket(ManualClock(NOW)), "us-east-1")


def products(client: Any, service: str, **filters: str) -> list[dict[str, Any]]:
    answer = client.get_products(
        ServiceCode=service,
        Filters=[{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()],
        FormatVersion="aws_v1",
    )
    return [json.loads(item) for item in answer["PriceList"]]


def on_demand_usd(product: dict[str, Any]) -> float:
    (term,) = product["terms"]["OnDemand"].values()
    (dimension,) = term["priceDimensions"].values()
    return float(dimension["pricePerUnit"]["USD"])


# --- Pricing API ----------------------------------------------------------------------


def test_ec2_on_demand_in_the_pricing_api_format(clients: AwsClients) -> None:
    (product,) = products(
        clients.pricing,
        "AmazonEC2",
        instanceType="p5.48xlarge",
        regionCode="us-east-1",
        **EC2_LINUX,
    )
    assert on_demand_usd(product) == 55.04
    attributes = product["product"]["attributes"]
    assert attributes["location"] == "US East (N. Virginia)"
    assert attributes["usagetype"] == "BoxUsage:p5.48xlarge"
    assert product["serviceCode"] == "AmazonEC2"


def test_without_the_capacitystatus_filter_three_products_come_back(clients: AwsClients) -> None:
    filters = {k: v for k, v in EC2_LINUX.items() if k not in ("capacitystatus", "marketoption")}
    found = products(
        clients.pricing, "AmazonEC2", instanceType="p5.48xlarge", regionCode="us-east-1", **filters
    )
    statuses = {
        p["product"]["attributes"]["capacitystatus"]: on_demand_usd(p)
        for p in found
        if p["product"]["attributes"]["marketoption"] == "OnDemand"
    }
    blocks = [p for p in found if p["product"]["attributes"]["marketoption"] == "CapacityBlock"]
    assert [on_demand_usd(p) for p in blocks] == [0.0]
    assert statuses == {
        "Used": 55.04,
        "UnusedCapacityReservation": 55.04,
        "AllocatedCapacityReservation": 0.0,
    }


def test_other_regions_are_priced_from_the_catalog_figure_by_region(
    clients: AwsClients,
) -> None:
    (product,) = products(
        clients.pricing,
        "AmazonEC2",
        instanceType="p5e.48xlarge",
        regionCode="us-west-2",
        **EC2_LINUX,
    )
    expected = catalog.price(PriceKind.ON_DEMAND, "p5e.48xlarge", "us-west-2")
    assert expected is not None and expected.region == "us-east-2"
    # The sandbox's regions differ in price as AWS's do (us-west-2 1.03, us-east-2 0.97).
    assert on_demand_usd(product) == round(expected.usd_per_hour * 1.03 / 0.97, 4)
    assert product["product"]["attributes"]["usagetype"] == "USW2-BoxUsage:p5e.48xlarge"


def test_sagemaker_training_and_hosting(clients: AwsClients) -> None:
    found = products(
        clients.pricing, "AmazonSageMaker", instanceName="ml.p5.48xlarge", regionCode="us-east-1"
    )
    by_component = {p["product"]["attributes"]["component"]: p for p in found}
    assert set(by_component) == {"Training", "Hosting"}
    assert "Train" in by_component["Training"]["product"]["attributes"]["usagetype"]
    assert "Host" in by_component["Hosting"]["product"]["attributes"]["usagetype"]
    expected = catalog.price(PriceKind.SAGEMAKER_ON_DEMAND, "p5.48xlarge", "us-east-1")
    assert expected is not None
    assert {on_demand_usd(p) for p in found} == {expected.usd_per_hour}


def test_other_filter_types(clients: AwsClients) -> None:
    def count(*filters: dict[str, str]) -> int:
        pages = clients.pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2", Filters=list(filters)
        )
        return sum(len(page["PriceList"]) for page in pages)

    region = {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}
    on_demand = {"Type": "TERM_MATCH", "Field": "marketoption", "Value": "OnDemand"}
    used = {"Type": "EQUALS", "Field": "capacitystatus", "Value": "Used"}
    any_of = {"Type": "ANY_OF", "Field": "instanceType", "Value": "p5.48xlarge, p4d.24xlarge"}
    none_of = {"Type": "NONE_OF", "Field": "instanceType", "Value": "p5.48xlarge"}
    contains = {"Type": "CONTAINS", "Field": "instanceType", "Value": "g7e."}
    assert count(region, on_demand, used, any_of) == 2
    assert count(region, on_demand, used, contains) == 6
    assert count(region, on_demand, used, none_of) == count(region, on_demand, used) - 1
    # Without marketoption, each type's $0 Capacity Block row comes back too.
    assert count(region, used, any_of) == 4


def test_pricing_pagination_and_a_bad_token(clients: AwsClients) -> None:
    first = clients.pricing.get_products(ServiceCode="AmazonSageMaker", MaxResults=5)
    assert len(first["PriceList"]) == 5 and first["NextToken"]
    with pytest.raises(ClientError) as exc:
        clients.pricing.get_products(ServiceCode="AmazonSageMaker", NextToken="nope")
    assert exc.value.response["Error"]["Code"] == "InvalidNextTokenException"


def test_other_services_have_no_products_here(clients: AwsClients) -> None:
    assert clients.pricing.get_products(ServiceCode="AmazonS3")["PriceList"] == []


def test_every_catalog_type_and_region_prices_within_the_model(clients: AwsClients) -> None:
    # The market validates every answer against the output shape; walk all of it.
    for service in ("AmazonEC2", "AmazonSageMaker"):
        pages = clients.pricing.get_paginator("get_products").paginate(ServiceCode=service)
        assert sum(len(page["PriceList"]) for page in pages) > 100


# --- Spot -----------------------------------------------------------------------------


def test_spot_history_gives_one_price_per_zone(clients: AwsClients) -> None:
    history = clients.ec2.describe_spot_price_history(
        InstanceTypes=["p5.48xlarge"], ProductDescriptions=["Linux/UNIX"], StartTime=NOW
    )["SpotPriceHistory"]
    assert sorted(e["AvailabilityZone"] for e in history) == [f"us-east-1{z}" for z in "abcdef"]
    spot = catalog.price(PriceKind.SPOT, "p5.48xlarge", "us-east-1")
    assert spot is not None
    prices = [float(e["SpotPrice"]) for e in history]
    assert all(abs(p / spot.usd_per_hour - 1) <= 0.05 for p in prices)
    assert len(set(prices)) > 1  # zones differ ...
    again = clients.ec2.describe_spot_price_history(
        InstanceTypes=["p5.48xlarge"], ProductDescriptions=["Linux/UNIX"], StartTime=NOW
    )["SpotPriceHistory"]
    assert [e["SpotPrice"] for e in again] == [e["SpotPrice"] for e in history]  # ... stably
    assert all(e["Timestamp"] == NOW.replace(minute=0) for e in history)
    assert {e["ProductDescription"] for e in history} == {"Linux/UNIX"}


def test_spot_zone_narrowing_filters_and_unknown_types(clients: AwsClients) -> None:
    one = clients.ec2.describe_spot_price_history(
        InstanceTypes=["p5.48xlarge"], AvailabilityZone="us-east-1b"
    )["SpotPriceHistory"]
    assert {e["AvailabilityZone"] for e in one} == {"us-east-1b"}
    filtered = clients.ec2.describe_spot_price_history(
        Filters=[
            {"Name": "instance-type", "Values": ["g6e.*"]},
            {"Name": "product-description", "Values": ["Linux/UNIX"]},
            {"Name": "availability-zone", "Values": ["us-east-1a"]},
        ]
    )["SpotPriceHistory"]
    assert sorted(e["InstanceType"] for e in filtered) == [
        "g6e.12xlarge",
        "g6e.48xlarge",
        "g6e.xlarge",
    ]
    unknown = clients.ec2.describe_spot_price_history(InstanceTypes=["m5.large"])
    assert unknown["SpotPriceHistory"] == []


def test_every_catalog_type_has_spot_prices_within_the_model(clients: AwsClients) -> None:
    pages = clients.ec2.get_paginator("describe_spot_price_history").paginate(
        PaginationConfig={"PageSize": 50}
    )
    types = {e["InstanceType"] for page in pages for e in page["SpotPriceHistory"]}
    assert types == set(catalog.instance_types)
