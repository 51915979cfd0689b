"""The MIG layout rules: profile tables, the validator and its SageMaker request fields."""

from __future__ import annotations

import re
from collections import Counter

import botocore.session
import pytest
from botocore.validate import ParamValidator
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.catalog import default_catalog
from bot.domain.mig import (
    FAMILIES,
    INFERENCE_AMI_DRIVERS,
    RECOMMENDED_AMI,
    EndpointKind,
    UnknownProfile,
    check_layout,
)
from bot.domain.mig.layout import component_errors, find_placement
from bot.domain.mig.profiles import GpuFamily, Profile
from tests.mig_oracle import placeable

catalog = default_catalog()
P4D = catalog.instance("p4d.24xlarge")
ARTICLE = ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]
SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")
SEVEN_SLICE_TYPES = [
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
]
MIG_TYPES = [t for t in catalog.instance_types if catalog.instance(t).mig_family]


# Position in every seven-slice table; "1g-double" is the 1g with two memory slices.
SIZES = {"1g": 0, "1g-double": 1, "2g": 2, "3g": 3, "4g": 4, "7g": 5}


def names(instance_type: str, *sizes: str) -> list[str]:
    """Profile names on this instance's GPU by size: ("1g",) on p4d -> ["1g.5gb"]."""
    family = FAMILIES[catalog.instance(instance_type).mig_family or ""]
    return [family.profiles[SIZES[s]].name for s in sizes]


# --- the article's example ------------------------------------------------------------


def test_article_layout_on_p4d() -> None:
    check = check_layout(P4D, ARTICLE)
    assert check.valid, check.errors
    assert check.partitions_per_gpu == 3
    assert check.partitions_per_instance == 24
    assert check.partitions_total == 24
    assert check.partitions_by_profile() == dict.fromkeys(ARTICLE, 8)
    assert check.unused_compute_slices == 0  # all 7 compute slices in use
    assert check.unused_memory_slices == 1


def test_names_with_or_without_prefix_render_with_it() -> None:
    check = check_layout(P4D, ["4G.20GB", "mig-2g.10gb", " 1g.5gb "])
    assert check.valid
    assert check.profiles == tuple(ARTICLE)


def test_instance_count_multiplies_the_endpoint_partitions() -> None:
    check = check_layout(P4D, ARTICLE, instance_count=2)
    assert (check.partitions_per_gpu, check.partitions_total) == (3, 48)
    assert check.partitions_by_profile()["mig-4g.20gb"] == 16


def test_sagemaker_names_work_too() -> None:
    assert check_layout(catalog.instance("ml.p4d.24xlarge"), ARTICLE).valid


# --- partition limits -----------------------------------------------------------------


@pytest.mark.parametrize("instance_type", SEVEN_SLICE_TYPES)
def test_seven_partitions_fit_eight_do_not(instance_type: str) -> None:
    instance = catalog.instance(instance_type)
    assert check_layout(instance, names(instance_type, *["1g"] * 7)).valid
    eight = check_layout(instance, names(instance_type, *["1g"] * 8))
    assert not eight.valid
    assert eight.errors == (f"8 partitions per GPU; an {instance.gpu_model} takes at most 7",)


def test_g7_takes_two_partitions_not_three() -> None:
    g7 = catalog.instance("g7.12xlarge")
    two = check_layout(g7, ["1g.16gb", "1g.16gb"])
    assert two.valid and two.partitions_total == 4  # 2 GPUs
    three = check_layout(g7, ["1g.16gb"] * 3)
    assert three.errors == ("3 partitions per GPU; an RTX PRO 4500 32GB takes at most 2",)


def test_g7e_takes_four_partitions_not_five() -> None:
    g7e = catalog.instance("g7e.2xlarge")
    assert check_layout(g7e, ["1g.24gb"] * 4).valid
    five = check_layout(g7e, ["1g.24gb"] * 5)
    assert five.errors == ("5 partitions per GPU; an RTX PRO 6000 96GB takes at most 4",)


@pytest.mark.parametrize(
    ("instance_type", "profile"), [("g7.2xlarge", "1g.16gb"), ("g7e.2xlarge", "1g.24gb")]
)
def test_rtx_pro_tables_carry_their_unverified_label(instance_type: str, profile: str) -> None:
    note = check_layout(catalog.instance(instance_type), [profile]).to_json()["note"]
    assert "unverified" in note and "source article" in note


def test_documented_tables_carry_no_label() -> None:
    assert check_layout(P4D, ARTICLE).to_json()["note"] is None


def test_g7e_halves_and_quarters_mix() -> None:
    g7e = catalog.instance("g7e.2xlarge")
    assert check_layout(g7e, ["2g.48gb", "1g.24gb", "1g.24gb"]).valid
    assert not check_layout(g7e, ["4g.96gb", "1g.24gb"]).valid


# --- placements: slice sums are not enough --------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "valid"),
    [
        (("3g", "3g"), True),
        (("3g", "3g", "1g"), False),  # compute sums to 7, but two 3g fill the memory
        (("4g", "3g"), True),
        (("4g", "2g", "1g"), True),
        (("4g", "4g"), False),
        (("3g", "2g", "1g", "1g"), True),
        (("2g", "2g", "2g", "1g", "1g"), False),  # 8 compute slices
        (("2g", "2g", "2g", "1g-double"), True),
        (("1g-double",) * 4, True),
        (("1g-double",) * 4 + ("1g",), False),
        (("7g",), True),
        (("7g", "1g"), False),
        (("3g", "3g", "3g"), False),
    ],
)
@pytest.mark.parametrize("instance_type", ["p4d.24xlarge", "p5.48xlarge", "p6-b200.48xlarge"])
def test_placements(instance_type: str, sizes: tuple[str, ...], valid: bool) -> None:
    check = check_layout(
        catalog.instance(instance_type), names(instance_type, *sizes), ami=RECOMMENDED_AMI
    )
    assert check.valid is valid, check.errors


def test_two_3g_fill_the_gpu_and_the_message_says_why() -> None:
    full = check_layout(P4D, ["3g.20gb", "3g.20gb"])
    assert full.unused_compute_slices == 1 and full.unused_memory_slices == 0
    (error,) = check_layout(P4D, ["3g.20gb", "3g.20gb", "1g.5gb"]).errors
    assert "mig-3g.20gb x2 + mig-1g.5gb" in error
    assert "7 of 7 compute slices and 9 of 8 memory slices" in error


def test_compute_beyond_seven_is_named() -> None:
    (error,) = check_layout(P4D, ["2g.10gb"] * 3 + ["1g.5gb"] * 2).errors
    assert "8 of 7 compute slices" in error


def test_compute_is_a_resource_of_its_own() -> None:
    # On the real tables disjoint memory already bounds compute; a table where it does not
    # shows the placement still refuses more compute than the GPU has.
    wide = Profile("2g.1gb", 2, 1, 2, (0, 1))
    family = GpuFamily("test", "Test GPU", 2, 3, 2, 2, (wide,))
    assert find_placement(family, [wide]) is not None
    assert find_placement(family, [wide, wide]) is None


def test_more_of_one_profile_than_fit() -> None:
    check = check_layout(P4D, ["4g.20gb", "4g.20gb"])
    assert check.errors == ("2 x mig-4g.20gb: at most 1 fit on one A100 40GB",)


def test_placement_is_reported_by_start_slice() -> None:
    check = check_layout(P4D, ["1g.5gb", "3g.20gb", "2g.10gb", "1g.5gb"])
    spans = [(p.profile.sagemaker_name, p.start, p.end) for p in check.placement]
    assert spans == [
        ("mig-2g.10gb", 0, 1),
        ("mig-1g.5gb", 2, 2),
        ("mig-1g.5gb", 3, 3),
        ("mig-3g.20gb", 4, 7),
    ]


# --- profiles of the wrong GPU, and names that do not exist ---------------------------


def test_wrong_family_names_the_right_profiles() -> None:
    (error,) = check_layout(P4D, ["4g.20gb", "mig-3g.40gb"]).errors
    assert "mig-3g.40gb (A100 80GB / H100 80GB)" in error
    assert "A100 40GB in p4d.24xlarge" in error
    assert error.endswith(
        "its profiles are mig-1g.5gb, mig-1g.10gb, mig-2g.10gb, mig-3g.20gb, mig-4g.20gb, "
        "mig-7g.40gb"
    )


def test_wrong_family_on_h200() -> None:
    (error,) = check_layout(catalog.instance("p5en.48xlarge"), ["1g.10gb"]).errors
    assert "mig-1g.10gb (A100 40GB / A100 80GB / H100 80GB)" in error
    assert "mig-1g.18gb, mig-1g.35gb, mig-2g.35gb, mig-3g.71gb, mig-4g.71gb, mig-7g.141gb" in error


def test_unknown_profile_raises_naming_it() -> None:
    with pytest.raises(UnknownProfile) as info:
        check_layout(P4D, ["4g.20gb", "5g.30gb"])
    assert info.value.names == ["mig-5g.30gb"]
    assert 'unknown MIG profile "mig-5g.30gb"' in str(info.value)


def test_unknown_profile_suggests_this_gpus_profiles() -> None:
    with pytest.raises(UnknownProfile) as info:
        check_layout(P4D, ["4g.2gb"])
    assert info.value.suggestions[0] == "mig-4g.20gb"


def test_instance_without_mig() -> None:
    (error,) = check_layout(catalog.instance("g5.xlarge"), ["1g.5gb"]).errors
    assert "g5.xlarge (A10G) has no MIG partition profiles" in error


def test_an_empty_layout_is_refused() -> None:
    assert check_layout(P4D, []).errors == ("a layout needs at least one profile",)


# --- the P4d driver rule --------------------------------------------------------------


def test_1g_10gb_on_p4d_needs_a_newer_ami() -> None:
    (error,) = check_layout(P4D, ["1g.10gb", "1g.10gb"]).errors
    assert "mig-1g.10gb needs NVIDIA driver R525" in error
    assert "470.256.02" in error
    assert "InferenceAmiVersion=al2023-ami-sagemaker-inference-gpu-4-1" in error


@pytest.mark.parametrize("ami", [a for a, driver in INFERENCE_AMI_DRIVERS.items() if driver])
def test_any_gpu_ami_with_driver_525_or_newer_is_enough(ami: str) -> None:
    check = check_layout(P4D, ["1g.10gb"], ami=ami)
    assert check.valid, check.errors


def test_the_driver_rule_is_p4d_only() -> None:
    assert check_layout(P4D, ["1g.5gb", "2g.10gb"]).valid
    assert check_layout(catalog.instance("p4de.24xlarge"), ["1g.10gb"]).valid


def test_neuron_ami_is_not_for_gpus() -> None:
    (error,) = check_layout(P4D, ARTICLE, ami="al2-ami-sagemaker-inference-neuron-2").errors
    assert "Inferentia and Trainium" in error


def test_unknown_ami_lists_the_accepted_values() -> None:
    (error,) = check_layout(P4D, ["1g.10gb"], ami="al2023-ami-sagemaker-inference-gpu-5").errors
    assert '"al2023-ami-sagemaker-inference-gpu-5"' in error
    for ami in INFERENCE_AMI_DRIVERS:
        assert ami in error


def test_ami_table_matches_the_botocore_enum() -> None:
    shape = SAGEMAKER.shape_for("ProductionVariant").members["InferenceAmiVersion"]
    assert set(INFERENCE_AMI_DRIVERS) == set(shape.enum)


# --- endpoint kinds and multi-GPU models ----------------------------------------------


@pytest.mark.parametrize(
    "kind",
    [EndpointKind.SINGLE_MODEL, EndpointKind.SERVERLESS, EndpointKind.HETEROGENEOUS_POOL],
)
def test_only_inference_component_endpoints(kind: EndpointKind) -> None:
    (error,) = check_layout(P4D, ARTICLE, endpoint=kind).errors
    assert "inference components" in error and kind.value in error


def test_errors_are_collected_not_stopped_at_the_first() -> None:
    check = check_layout(
        P4D,
        ["1g.10gb"] * 5,
        endpoint=EndpointKind.SERVERLESS,
        ami="al2-ami-sagemaker-inference-neuron-2",
    )
    assert len(check.errors) == 3  # endpoint, AMI, 5 x 1g.10gb where 4 fit


def test_a_model_on_two_gpus_cannot_use_a_partition() -> None:
    check = check_layout(P4D, ARTICLE)
    assert component_errors(check, "1g.5gb") == []
    (error,) = component_errors(check, "mig-1g.5gb", accelerators=2)
    assert "uses whole GPUs" in error and "NumberOfAcceleratorDevicesRequired=2" in error
    (missing,) = component_errors(check, "3g.20gb")
    assert missing.startswith("mig-3g.20gb is not in the endpoint's layout")


# --- rendering, checked against the botocore SageMaker model --------------------------


def test_partition_layouts_is_the_exact_api_value() -> None:
    check = check_layout(P4D, ARTICLE)
    assert check.partition_layouts() == [{"AcceleratorPartitionTypes": ARTICLE}]
    assert check.component_requirements("1g.5gb") == {
        "AcceleratorPartitionType": "mig-1g.5gb",
        "NumberOfAcceleratorDevicesRequired": 1,
    }


def test_invalid_layouts_do_not_render() -> None:
    check = check_layout(P4D, ["4g.20gb", "4g.20gb"])
    with pytest.raises(ValueError, match="invalid layout"):
        check.partition_layouts()
    with pytest.raises(ValueError, match="invalid layout"):
        check.component_requirements("4g.20gb")


def _input_errors(operation: str, params: dict[str, object]) -> str:
    shape = SAGEMAKER.operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    return report.generate_report() if report.has_errors() else ""


def _partition_pattern() -> re.Pattern[str]:
    shape = SAGEMAKER.shape_for("AcceleratorPartitionType")
    return re.compile(shape.metadata["pattern"])


@pytest.mark.parametrize("ami", [None, RECOMMENDED_AMI])
def test_variant_fields_pass_the_botocore_model(ami: str | None) -> None:
    check = check_layout(P4D, ARTICLE, ami=ami)
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": P4D.sagemaker_name,
        "InitialInstanceCount": 1,
        **check.production_variant_fields(),
    }
    params = {"EndpointConfigName": "mig", "ProductionVariants": [variant]}
    assert _input_errors("CreateEndpointConfig", params) == ""
    assert ("InferenceAmiVersion" in variant) is (ami is not None)


def test_component_requirements_pass_the_botocore_model() -> None:
    check = check_layout(P4D, ARTICLE)
    requirements = check.component_requirements("4g.20gb")
    params: dict[str, object] = {
        "InferenceComponentName": "llama",
        "EndpointName": "mig",
        "VariantName": "AllTraffic",
        "Specification": {
            "ModelName": "llama",
            "ComputeResourceRequirements": {**requirements, "MinMemoryRequiredInMb": 1024},
        },
        "RuntimeConfig": {"CopyCount": 1},
    }
    assert _input_errors("CreateInferenceComponent", params) == ""
    # The host memory is the deployer's to add: the API requires it.
    params["Specification"] = {"ModelName": "llama", "ComputeResourceRequirements": requirements}
    assert "MinMemoryRequiredInMb" in _input_errors("CreateInferenceComponent", params)


def test_every_profile_name_matches_the_api_pattern() -> None:
    pattern = _partition_pattern()
    for family in FAMILIES.values():
        for profile in family.profiles:
            assert pattern.fullmatch(profile.sagemaker_name), profile.sagemaker_name


def test_mig_instance_types_are_sagemaker_variant_types() -> None:
    enum = set(SAGEMAKER.shape_for("ProductionVariantInstanceType").enum)
    for name in MIG_TYPES:
        assert catalog.instance(name).sagemaker_name in enum


# --- the tables themselves ------------------------------------------------------------


def test_every_catalog_mig_family_has_a_table() -> None:
    for name in MIG_TYPES:
        assert catalog.instance(name).mig_family in FAMILIES


@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_tables_are_consistent(family: GpuFamily) -> None:
    for p in family.profiles:
        assert p.name.startswith(f"{p.compute_slices}g."), p.name
        assert p.compute_slices <= family.compute_slices
        assert all(s >= 0 and s + p.memory_slices <= family.memory_slices for s in p.starts)
        assert p.max_per_gpu <= len(p.starts)
    assert max(p.memory_gb for p in family.profiles) == family.memory_gb


# --- properties -----------------------------------------------------------------------


ORACLE = {key: placeable(family) for key, family in FAMILIES.items()}


@st.composite
def layouts(draw: st.DrawFn) -> tuple[str, list[Profile]]:
    instance_type = draw(st.sampled_from(MIG_TYPES))
    family = FAMILIES[catalog.instance(instance_type).mig_family or ""]
    chosen = draw(st.lists(st.sampled_from(family.profiles), min_size=1, max_size=9))
    return instance_type, chosen


@given(layouts())
def test_the_validator_agrees_with_the_oracle(case: tuple[str, list[Profile]]) -> None:
    instance_type, chosen = case
    instance = catalog.instance(instance_type)
    check = check_layout(instance, [p.name for p in chosen], ami=RECOMMENDED_AMI)
    family = FAMILIES[instance.mig_family or ""]
    assert check.valid is (frozenset(Counter(chosen).items()) in ORACLE[family.key])


@given(layouts())
def test_accepted_layouts_never_overlap(case: tuple[str, list[Profile]]) -> None:
    instance_type, chosen = case
    check = check_layout(
        catalog.instance(instance_type), [p.name for p in chosen], ami=RECOMMENDED_AMI
    )
    if not check.valid:
        assert check.placement == ()
        return
    family = check.family
    assert family is not None
    taken: list[int] = []
    for placed in check.placement:
        assert placed.start in placed.profile.starts
        taken += range(placed.start, placed.end + 1)
    assert len(taken) == len(set(taken))  # no memory slice shared
    assert all(0 <= i < family.memory_slices for i in taken)
    assert sum(p.profile.compute_slices for p in check.placement) <= family.compute_slices
    assert Counter(p.profile for p in check.placement) == Counter(chosen)
    assert len(check.placement) <= family.max_partitions
