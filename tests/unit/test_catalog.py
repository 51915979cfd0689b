from __future__ import annotations

import json

import botocore.session
import pytest

from bot.domain.catalog import PriceKind, UnknownInstanceType, default_catalog

catalog = default_catalog()


def test_article_prices_for_p5_in_us_east_1() -> None:
    od = catalog.price(PriceKind.ON_DEMAND, "p5.48xlarge", "us-east-1")
    cb = catalog.price(PriceKind.CAPACITY_BLOCK, "p5.48xlarge", "us-east-1")
    assert od is not None and od.usd_per_hour == 55.04
    assert cb is not None and cb.usd_per_hour == 34.608
    assert not od.estimate and not cb.estimate
    assert "article" in od.source and "article" in cb.source


def test_newest_figure_wins() -> None:
    cb = catalog.price(PriceKind.CAPACITY_BLOCK, "p5.48xlarge", "us-east-1")
    assert cb is not None and cb.as_of.year == 2025  # not the 39.33 snapshot of 2024


def test_every_figure_has_source_and_date() -> None:
    prices = [
        price
        for name in catalog.instance_types
        for kind in PriceKind
        if (price := catalog.price(kind, name, "us-east-1")) is not None
    ]
    # Every kind of figure is present for some type, so the check below covers each.
    assert {p.kind for p in prices} == set(PriceKind)
    assert all(p.source and p.as_of for p in prices)


def test_other_region_falls_back_and_says_so() -> None:
    cb = catalog.price(PriceKind.CAPACITY_BLOCK, "p4d.24xlarge", "us-west-2")
    assert cb is not None and cb.usd_per_hour == 14.75
    assert "us-east-2 figure, none for us-west-2" in cb.source


def test_derived_figures_are_labelled_estimates() -> None:
    tp = catalog.price(PriceKind.TRAINING_PLAN, "p5.48xlarge", "us-east-1")
    assert tp is not None and tp.estimate
    assert tp.usd_per_hour == pytest.approx(55.04 * 0.275, rel=1e-3)
    assert "derived" in tp.source


def test_lookup_accepts_sagemaker_names_and_any_case() -> None:
    assert catalog.instance("ML.P5.48XLARGE").instance_type == "p5.48xlarge"
    p5 = catalog.instance("p5.48xlarge")
    assert (p5.gpus, p5.gpu_model, p5.mig_family) == (8, "H100 80GB", "h100-80gb")
    assert p5.sagemaker_name == "ml.p5.48xlarge"


def test_unknown_type_names_the_closest() -> None:
    with pytest.raises(UnknownInstanceType) as info:
        catalog.instance("p5.48xlargee")
    assert info.value.suggestions[0] == "p5.48xlarge"
    assert "closest known: p5.48xlarge" in str(info.value)


def test_capacity_block_families_from_the_docs() -> None:
    documented = [
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p4d.24xlarge",
        "trn1.32xlarge",
        "trn2.48xlarge",
    ]
    for name in documented:
        entry = catalog.instance(name)
        assert entry.capacity_blocks.offered
        assert "User Guide" in entry.capacity_blocks.source
    assert not catalog.instance("g5.12xlarge").capacity_blocks.offered


def test_training_plan_types_match_the_botocore_model() -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("SearchTrainingPlanOfferings").input_shape
    enum = {name.removeprefix("ml.") for name in shape.members["InstanceType"].enum}
    offered = {n for n in catalog.instance_types if catalog.instance(n).training_plans.offered}
    # Every type the catalog offers plans for is one the API accepts.
    assert offered <= enum
    # UltraServer-only types are the ones left out on purpose.
    assert enum - offered <= {"p6e-gb200.36xlarge"}


def test_gpu_counts_match_describe_instance_types() -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        names = list(catalog.instance_types)
        found = {}
        for page in ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=names):
            for it in page["InstanceTypes"]:
                gpus = it.get("GpuInfo", {}).get("Gpus") or it["NeuronInfo"]["NeuronDevices"]
                found[it["InstanceType"]] = gpus[0]["Count"]
    for name in names:
        assert catalog.instance(name).gpus == found[name], name


def test_no_block_or_plan_price_for_types_that_have_none() -> None:
    for kind in (PriceKind.CAPACITY_BLOCK, PriceKind.TRAINING_PLAN):
        assert catalog.price(kind, "g5.48xlarge", "us-east-1") is None
    assert catalog.price(PriceKind.TRAINING_PLAN, "trn2.3xlarge", "us-east-2") is None
    assert catalog.price(PriceKind.CAPACITY_BLOCK, "trn2.3xlarge", "us-east-2") is not None


def test_another_regions_figure_is_an_estimate() -> None:
    od = catalog.price(PriceKind.ON_DEMAND, "p5.48xlarge", "eu-west-1")
    assert od is not None and od.region == "us-east-1" and od.estimate


def test_catalog_cli_marks_figures_from_another_region(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    assert main(["catalog", "--json", "--region", "eu-west-1", "g5.48xlarge"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["prices"]["capacity-block"] is None and entry["prices"]["training-plan"] is None
    assert entry["prices"]["on-demand"]["region"] == "us-east-1"
    assert main(["catalog", "--region", "eu-west-1", "p5.48xlarge"]) == 0
    out = capsys.readouterr().out
    assert "(us-east-1)" in out


def test_catalog_cli_checks_the_region_and_the_type_as_a_quote_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot.cli import main

    assert main(["catalog", "--region", "mars"]) == 2
    err = capsys.readouterr().err
    assert '"mars" is not an AWS region' in err and "eu-west-1" in err
    # p5 is not sold in eu-west-1 (the sandbox answers DescribeInstanceTypeOfferings as
    # EC2 does): no Capacity Blocks or plans there, whatever the type has elsewhere.
    assert main(["catalog", "--json", "--region", "eu-west-1", "p5.48xlarge"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["sold_in_region"] is False
    assert entry["capacity_blocks_in_region"] is False
    assert entry["training_plans_in_region"] is False
    assert main(["catalog", "--json", "--region", "us-east-1", "p5.48xlarge"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["sold_in_region"] is True and entry["capacity_blocks_in_region"] is True
    assert main(["catalog", "--region", "eu-west-1", "p5.48xlarge"]) == 0
    out = capsys.readouterr().out
    assert "p5.48xlarge is not sold in eu-west-1" in out
    assert "Capacity Blocks for p5.48xlarge: us-east-1" in out
