"""Regions: names checked against AWS's, types against what each region sells, and
several regions searched at once for one recommendation (sandbox market, real clients)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.adapters.aws.clients import clients_factory
from bot.adapters.aws.market import AwsMarket
from bot.adapters.aws.regions import UnknownRegion
from bot.adapters.clock import ManualClock
from bot.config import Settings
from bot.domain.catalog import default_catalog
from bot.domain.grammar import RequestSyntaxError, parse_request, render_request
from bot.services.quoting import QuoteService
from tests.aws_live import Responder, live_clients
from tests.conftest import NOW

WHEN = (NOW + timedelta(days=14)).date().isoformat()


@pytest.fixture
def quotes() -> Iterator[QuoteService]:
    clock = ManualClock(NOW)
    settings = Settings.model_validate({"GPU_BOT_AWS": "sandbox", "AWS_REGION": "us-east-1"})
    market = AwsMarket(clients_factory(settings, clock), default_catalog())
    yield QuoteService(market, default_catalog(), clock, "us-east-1")
    market.close()


def test_grammar_reads_any_and_lists_of_regions() -> None:
    for text, region in [
        ("region=any", "any"),
        ("region=us-east-1,us-west-2", "us-east-1,us-west-2"),
        ("region=US-EAST-1, ", "us-east-1"),
        ("region=us-east-1,us-east-1,us-west-2", "us-east-1,us-west-2"),
    ]:
        draft = parse_request(f"1x p5.48xlarge 2d from {WHEN} {text}", now=NOW)
        assert draft.region == region
        assert parse_request(render_request(draft), now=NOW) == draft
    with pytest.raises(RequestSyntaxError, match="up to 8 regions"):
        parse_request("region=" + ",".join(f"us-east-{n}" for n in range(1, 10)), now=NOW)


@pytest.mark.parametrize("text", ["us-east-9", "region=mars-1", "region=us-east-1,us-east-9"])
def test_a_region_aws_does_not_have_is_refused_naming_the_valid_ones(
    quotes: QuoteService, text: str
) -> None:
    with pytest.raises(RequestSyntaxError) as raised:
        quotes.complete(quotes.parse(f"1x p5.48xlarge 2d from {WHEN} {text}"))
    message = str(raised.value)
    assert "is not an AWS region" in message
    assert "us-west-2" in message and "eu-west-1" in message and "region=any" in message


def test_a_type_the_region_does_not_sell_is_refused_before_quoting(
    quotes: QuoteService,
) -> None:
    request = quotes.complete(quotes.parse(f"1x p5.48xlarge 2d from {WHEN} eu-west-1"))
    with pytest.raises(RequestSyntaxError) as raised:
        quotes.check_sold(request)
    assert "p5.48xlarge is not sold in eu-west-1" in str(raised.value)
    assert "us-east-2" in str(raised.value)  # where the catalog says it is

    quote = quotes.quote(request)  # the Slack path: a quote that says so, no prices
    assert quote.recommendation.kind is None
    assert "not sold in eu-west-1" in quote.recommendation.reasons[0]
    assert all(o.total_usd is None for o in quote.options)


def test_region_any_searches_several_regions_and_names_the_one_it_recommends(
    quotes: QuoteService,
) -> None:
    quote = quotes.quote_text(f"1x p5.48xlarge 2d from {WHEN} region=any ec2")

    searched = {r.region for r in quote.regions}
    assert len(searched) >= 3 and "us-east-1" in searched
    chosen = quote.recommendation.region
    assert chosen is not None and chosen == quote.request.region
    assert quote.recommendation.reasons[0].startswith(f"region {chosen}:")
    totals = {r.region: r.total_usd for r in quote.regions if r.total_usd is not None}
    assert len(set(totals.values())) > 1  # the regions differ in price
    assert quote.recommended is not None and quote.recommended.total_usd == totals[chosen]


def test_a_listed_region_that_does_not_sell_the_type_is_left_out_and_said(
    quotes: QuoteService,
) -> None:
    quote = quotes.quote_text(f"1x p5.48xlarge 2d from {WHEN} region=us-east-1,eu-west-1")
    assert [r.region for r in quote.regions] == ["us-east-1"]
    assert any("not sold in eu-west-1" in r for r in quote.recommendation.reasons)


def test_no_clients_for_a_region_string_aws_does_not_have() -> None:
    settings = Settings.model_validate({"GPU_BOT_AWS": "sandbox", "AWS_REGION": "us-east-1"})
    factory = clients_factory(settings, ManualClock(NOW))
    with pytest.raises(UnknownRegion):
        factory("us-east-9")
    assert factory("eu-west-1") is factory("eu-west-1")
    asked: list[str] = []
    market = AwsMarket(lambda region: asked.append(region) or factory(region), default_catalog())
    try:
        with pytest.raises(UnknownRegion):
            market.offered_in("p5.48xlarge", "us-east-9")
    finally:
        market.close()
    assert asked == []


def test_what_a_region_sells_is_asked_once_then_cached() -> None:
    clients = live_clients()
    responder = Responder().add(
        "DescribeInstanceTypeOfferings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": "p5.48xlarge", "LocationType": "region", "Location": "us-east-1"}
            ]
        },
    )
    responder.install(clients.ec2)
    market = AwsMarket(lambda _r: clients, default_catalog())
    try:
        assert market.offered_in("p5.48xlarge", "us-east-1") is True
        assert market.offered_in("p5.48xlarge", "us-east-1") is True
    finally:
        market.close()
    assert responder.count("DescribeInstanceTypeOfferings") == 1
    (params,) = responder.params("DescribeInstanceTypeOfferings")
    assert params["LocationType"] == "region"
    assert params["Filters"] == [{"Name": "instance-type", "Values": ["p5.48xlarge"]}]


def _cli(*args: str, tz: str = "UTC") -> subprocess.CompletedProcess[str]:
    env = os.environ | {"GPU_BOT_AWS": "sandbox", "TZ": tz, "REDIS_URL": "memory://"}
    return subprocess.run(
        [sys.executable, "-m", "bot", "quote", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_cli_region_any_json_names_every_region_and_the_recommended_one() -> None:
    done = _cli("1x", "p5.48xlarge", "2d", "from", "tomorrow", "region=any", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    regions = data["regions"]
    assert len({r["region"] for r in regions}) >= 3
    for entry in regions:
        assert entry["options"] and all(o["region"] == entry["region"] for o in entry["options"])
    chosen = data["recommendation"]["region"]
    assert chosen in {r["region"] for r in regions}
    assert chosen in data["recommendation"]["reasons"][0]
    assert data["request"]["region"] == chosen


def test_cli_prints_the_same_times_in_any_host_time_zone() -> None:
    args = ("2x", "p5.48xlarge", "2d", "from", "2026-12-20", "--json")
    outputs = []
    for tz in ("UTC", "America/New_York"):
        done = _cli(*args, tz=tz)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        data.pop("quoted_at")
        outputs.append(data)
    assert outputs[0] == outputs[1]
    block = next(o for o in outputs[0]["options"] if o["kind"] == "capacity-block")
    assert block["start"].endswith("11:30:00+00:00")


def test_a_type_no_region_sells_is_refused_saying_none_is_known() -> None:
    """A world where EC2 sells g5.48xlarge nowhere (DescribeInstanceTypeOfferings answers
    nothing in every region): the refusal says no region is known, names none."""
    from dataclasses import replace

    from aws_sandbox import SandboxMarket
    from aws_sandbox.world import World, default_world
    from bot.adapters.aws.sandboxed import sandbox_clients

    world = default_world()
    specs = [world.spec(name) for name in world.instance_types]
    unsold = [replace(s, sold_in=()) if s.instance_type == "g5.48xlarge" else s for s in specs]
    sandbox = SandboxMarket(ManualClock(NOW), World([s for s in unsold if s is not None]))
    market = AwsMarket(lambda region: sandbox_clients(sandbox, region), default_catalog())
    quotes = QuoteService(market, default_catalog(), ManualClock(NOW), "us-east-1")
    try:
        request = quotes.complete(quotes.parse(f"1x g5.48xlarge 2d from {WHEN} us-east-1"))
        refusal = quotes.unsold(request)
        assert refusal is not None
        assert refusal[0].startswith("g5.48xlarge is not sold in us-east-1")
        assert refusal[1] == "no region is known to sell g5.48xlarge"
        sold = quotes.complete(quotes.parse(f"1x g5.12xlarge 2d from {WHEN} us-east-1"))
        assert quotes.unsold(sold) is None
    finally:
        market.close()
