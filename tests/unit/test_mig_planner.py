"""The MIG planner: least-waste layouts, why nothing fits, and the chargeback."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.catalog import Catalog, default_catalog
from bot.domain.mig import (
    FAMILIES,
    RECOMMENDED_AMI,
    ModelError,
    ModelNeed,
    check_layout,
    parse_model,
    plan_layout,
)
from bot.domain.mig.planner import IDLE
from tests.mig_oracle import placeable

catalog = default_catalog()
P4D = catalog.instance("p4d.24xlarge")
MIG_TYPES = [t for t in catalog.instance_types if catalog.instance(t).mig_family]


def models(*texts: str) -> list[ModelNeed]:
    return [parse_model(t) for t in texts]


# --- reading --model ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llama=18gb", ModelNeed("llama", 18.0, 1)),
        ("embed=4gbx2", ModelNeed("embed", 4.0, 2)),
        ("Rerank-v2=2.5GBx3", ModelNeed("Rerank-v2", 2.5, 3)),
    ],
)
def test_parse_model(text: str, expected: ModelNeed) -> None:
    assert parse_model(text) == expected


@pytest.mark.parametrize(
    "text",
    ["llama", "llama=18", "=18gb", "llama=18mb", "llama=0gb", "llama=18gbx0", "llama=18gbx1025"],
)
def test_parse_model_refuses(text: str) -> None:
    with pytest.raises(ModelError, match=r"cannot read model|must be"):
        parse_model(text)


def test_a_model_named_twice_is_refused() -> None:
    with pytest.raises(ModelError, match="each model once"):
        plan_layout(P4D, models("a=1gb", "a=2gb"), catalog)


# --- choosing the layout --------------------------------------------------------------


def test_the_issue_example() -> None:
    plan = plan_layout(P4D, models("llama=18gb", "embed=4gbx2"), catalog)
    assert plan.check is not None and plan.check.valid
    # 4g+2g+1g would leave memory slice 7 outside any partition on every GPU (8 x 5 GB);
    # 3g+2g+1g+1g partitions all of it and holds the same models as tightly.
    assert plan.check.profiles == ("mig-3g.20gb", "mig-2g.10gb", "mig-1g.5gb", "mig-1g.5gb")
    held = [(a.model, a.profile.sagemaker_name, a.copies) for a in plan.assignments]
    assert held == [("llama", "mig-3g.20gb", 1), ("embed", "mig-1g.5gb", 2)]
    assert plan.waste_gb == 4.0  # 2 GB above llama, 1 GB above each embed copy
    assert plan.waste_compute_slices == 0
    assert plan.check.inference_ami_version is None


def test_a_full_gpu_beats_a_stranded_compute_slice() -> None:
    plan = plan_layout(catalog.instance("p5.4xlarge"), models("a=40gbx2"), catalog)
    assert plan.check is not None
    assert plan.check.profiles == ("mig-4g.40gb", "mig-3g.40gb")  # not 3g+3g
    assert plan.waste_compute_slices == 0


def test_fewer_partitions_break_a_tie() -> None:
    # 2g.48gb + 2 x 1g.24gb and 4 x 1g.24gb both waste only the 4 GB above the model.
    plan = plan_layout(catalog.instance("g7e.2xlarge"), models("a=20gb"), catalog)
    assert plan.check is not None
    assert plan.check.profiles == ("mig-2g.48gb", "mig-1g.24gb", "mig-1g.24gb")
    assert plan.waste_gb == 4.0


def test_the_tightest_partition_wins() -> None:
    plan = plan_layout(P4D, models("small=5gbx8"), catalog)
    assert plan.check is not None
    assert {a.profile.name for a in plan.assignments} == {"1g.5gb"}
    assert plan.waste_gb == 0.0


def test_copies_of_one_model_may_hold_two_profiles() -> None:
    # One H100: a full GPU of 20 GB partitions is 3 x 2g.20gb + 1g.20gb.
    plan = plan_layout(catalog.instance("p5.4xlarge"), models("a=15gbx4"), catalog)
    held = {(a.profile.name, a.copies) for a in plan.assignments}
    assert held == {("1g.20gb", 1), ("2g.20gb", 3)}
    assert plan.waste_compute_slices == 0


def test_a_plan_that_needs_1g_10gb_on_p4d_sets_the_ami() -> None:
    # 32 copies of 10 GB on 8 GPUs: four per GPU, which only a layout with 1g.10gb gives.
    plan = plan_layout(P4D, models("a=8gbx32"), catalog)
    assert plan.check is not None and plan.check.valid
    assert "mig-1g.10gb" in plan.check.profiles
    assert plan.check.inference_ami_version == RECOMMENDED_AMI
    fields = plan.check.production_variant_fields()
    assert fields["InferenceAmiVersion"] == RECOMMENDED_AMI


# --- when nothing fits ----------------------------------------------------------------


def test_a_model_bigger_than_a_gpu_needs_whole_gpus() -> None:
    plan = plan_layout(P4D, models("big=90gb", "embed=4gb"), catalog)
    assert not plan.fits and plan.check is None
    (reason,) = plan.reasons
    assert "big needs 90 GB, more than mig-7g.40gb" in reason
    assert "whole GPUs" in reason and "NumberOfAcceleratorDevicesRequired=3" in reason
    assert any(s.startswith("another instance type: ") for s in plan.suggestions)
    assert "a bigger profile: big fits mig-3g.90gb on p6-b200.48xlarge" in plan.suggestions


def test_a_model_no_gpu_partition_holds_gets_whole_gpus() -> None:
    plan = plan_layout(P4D, models("huge=500gb"), catalog)
    assert not plan.fits
    assert plan.suggestions[-1].startswith("whole GPUs: huge (500 GB) fits no MIG partition")


def test_too_many_copies_for_one_instance() -> None:
    plan = plan_layout(P4D, models("embed=4gbx100"), catalog)
    assert not plan.fits
    assert plan.reasons == (
        "100 copies need 4 GB or more; one A100 40GB holds at most 7 partitions that large, "
        "so p4d.24xlarge (8 GPUs) holds 56",
    )
    assert plan.suggestions == ("fewer copies per instance: split the models over more instances",)


def test_the_size_that_runs_out_is_named() -> None:
    plan = plan_layout(catalog.instance("p5.4xlarge"), models("a=30gbx3", "b=5gb"), catalog)
    assert plan.reasons == (
        "3 copies need 30 GB or more; one H100 80GB holds at most 2 partitions that large, "
        "so p5.4xlarge (1 GPU) holds 2",
    )
    # The cheapest type that holds all four copies comes first.
    assert plan.suggestions[0].startswith("another instance type: g7e.12xlarge (2x RTX PRO")


def test_sizes_that_fit_alone_but_not_together() -> None:
    # A 40 GB partition takes 4 memory slices; five 10 GB ones need 5 more of the 8.
    plan = plan_layout(catalog.instance("p5.4xlarge"), models("a=40gb", "b=10gbx5"), catalog)
    (reason,) = plan.reasons
    assert reason.startswith("each size fits on its own, but no one layout")
    assert "a x1 on mig-3g.40gb or larger, b x5 on mig-1g.10gb or larger" in reason


def test_an_instance_without_mig_points_to_ones_with_it() -> None:
    plan = plan_layout(catalog.instance("g5.xlarge"), models("embed=4gbx2"), catalog)
    assert plan.reasons == ("g5.xlarge (A10G) has no MIG partition profiles",)
    # Cheapest first, from the catalog.
    assert plan.suggestions[0].startswith("another instance type: g7.2xlarge")
    assert len(plan.suggestions) == 3


# --- chargeback -----------------------------------------------------------------------


def test_chargeback_by_compute_slices_held() -> None:
    plan = plan_layout(P4D, models("llama=18gb", "embed=4gbx2"), catalog)
    shares = {s.model: s for s in plan.chargeback}
    assert {m: s.compute_slices for m, s in shares.items()} == {"llama": 3, "embed": 2, IDLE: 51}
    assert plan.price is not None and plan.price.usd_per_hour == 21.96
    assert plan.price.estimate  # SageMaker rate approximated by the EC2 figure
    assert shares["llama"].usd_per_hour == pytest.approx(21.96 * 3 / 56, abs=1e-4)
    assert shares["embed"].fraction == pytest.approx(2 / 56)
    assert sum(s.usd_per_hour or 0 for s in plan.chargeback) == pytest.approx(21.96, abs=1e-3)


def test_chargeback_without_a_price_still_gives_shares() -> None:
    bare = Catalog(instances=[P4D], prices=[], derived={})
    plan = plan_layout(P4D, models("llama=18gb"), bare)
    assert plan.price is None
    assert [s.usd_per_hour for s in plan.chargeback] == [None, None]
    assert sum(s.fraction for s in plan.chargeback) == pytest.approx(1.0)


# --- properties -----------------------------------------------------------------------


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, list[ModelNeed]]:
    instance_type = draw(st.sampled_from(MIG_TYPES))
    count = draw(st.integers(min_value=1, max_value=4))
    needs = [
        ModelNeed(
            f"m{i}",
            draw(st.sampled_from([0.5, 4, 5, 9.5, 10, 18, 20, 24, 35, 40, 48, 71, 80, 100, 200])),
            draw(st.integers(min_value=1, max_value=24)),
        )
        for i in range(count)
    ]
    return instance_type, needs


ORACLE = {key: placeable(family) for key, family in FAMILIES.items()}


def _some_layout_holds(instance_type: str, needs: list[ModelNeed]) -> bool:
    """Hall's condition per memory threshold, over every layout one GPU can hold (found
    by the slice-walking oracle, not the planner's own enumeration)."""
    instance = catalog.instance(instance_type)
    family = FAMILIES[instance.mig_family or ""]
    for layout in ORACLE[family.key]:
        if all(
            sum(m.copies for m in needs if m.memory_gb >= t)
            <= sum(instance.gpus * n for p, n in layout if p.memory_gb >= t)
            for t in {m.memory_gb for m in needs}
        ):
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(requests())
def test_every_proposed_layout_passes_the_validator(case: tuple[str, list[ModelNeed]]) -> None:
    instance_type, needs = case
    instance = catalog.instance(instance_type)
    plan = plan_layout(instance, needs, catalog)
    assert plan.fits is _some_layout_holds(instance_type, needs)
    if plan.check is None:
        assert plan.reasons and plan.suggestions
        return
    again = check_layout(instance, plan.check.profiles, ami=plan.check.inference_ami_version)
    assert again.valid, again.errors
    # Every copy has a partition big enough, and no partition is handed out twice.
    copies: Counter[str] = Counter()
    used: Counter[str] = Counter()
    need = {m.name: m.memory_gb for m in needs}
    for a in plan.assignments:
        assert a.profile.memory_gb >= need[a.model]
        copies[a.model] += a.copies
        used[a.profile.sagemaker_name] += a.copies
    assert copies == {m.name: m.copies for m in needs}
    available = plan.check.partitions_by_profile()
    assert all(n <= available[name] for name, n in used.items())
    assert sum(s.fraction for s in plan.chargeback) == pytest.approx(1.0)
