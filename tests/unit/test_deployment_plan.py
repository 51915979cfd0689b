"""Deployment plans onto training plans: the requests, each refusal by its rule, the cost
per model, and every request checked against the botocore SageMaker model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.adapters.aws.request_check import request_problems
from bot.domain.catalog import default_catalog
from bot.domain.deployment import (
    DeploymentAsk,
    DeploymentPlan,
    ReservedPlan,
    Rule,
    entity_name,
    plan_deployment,
)
from bot.domain.mig import RECOMMENDED_AMI, ModelError, UnknownProfile, parse_model
from bot.domain.mig.planner import IDLE

catalog = default_catalog()
P4D = catalog.instance("p4d.24xlarge")
P5 = catalog.instance("p5.48xlarge")
TRN1 = catalog.instance("trn1.32xlarge")
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/r1-plan"
ROLE = "arn:aws:iam::123456789012:role/sagemaker"
START = datetime(2026, 12, 14, 11, 30, tzinfo=UTC)
PLAN = ReservedPlan(
    ARN,
    instance_type="ml.p4d.24xlarge",
    instances=2,
    status="Active",
    target_resources=("endpoint",),
    start=START,
    end=datetime(2026, 12, 15, 11, 30, tzinfo=UTC),
    fee_usd=480.0,
)
ARTICLE = ("mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb")
TAGS = {"gpu-bot:request": "R1", "gpu-bot:deployment": "R1-d1"}


def ask(*models: str, **changes: Any) -> DeploymentAsk:
    fields: dict[str, Any] = {
        "endpoint_name": "r1-d1",
        "instance": P4D,
        "instance_count": 1,
        "models": tuple(parse_model(m) for m in models),
        "plan": PLAN,
        "execution_role_arn": ROLE,
        "tags": TAGS,
    } | changes
    return DeploymentAsk(**fields)


def plan(*models: str, **changes: Any) -> DeploymentPlan:
    taken = changes.pop("taken_endpoints", frozenset())
    configs = changes.pop("taken_configs", frozenset())
    return plan_deployment(
        ask(*models, **changes), catalog, taken_endpoints=taken, taken_configs=configs
    )


def rules(result: DeploymentPlan) -> list[Rule]:
    return [e.rule for e in result.errors]


def api_problems(result: DeploymentPlan) -> list[str]:
    return [
        p for op, params in result.requests() for p in request_problems("sagemaker", op, params)
    ]


# --- the requests ---------------------------------------------------------------------


def test_the_article_layout_gives_one_component_per_model() -> None:
    result = plan("llama=18gbx8", "rank=9gbx8", "embed=4gbx8", layout=ARTICLE)
    assert result.valid, result.errors
    (variant,) = result.endpoint_config_params()["ProductionVariants"]
    assert variant == {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.p4d.24xlarge",
        "InitialInstanceCount": 1,
        "CapacityReservationConfig": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "MlReservationArn": ARN,
        },
        "AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": list(ARTICLE)}],
    }
    components = {
        c["Specification"]["ModelName"]: c for c in result.to_json()["inference_components"]
    }
    assert components["llama"]["Specification"]["ComputeResourceRequirements"] == {
        "AcceleratorPartitionType": "mig-4g.20gb",
        "NumberOfAcceleratorDevicesRequired": 1,
        "MinMemoryRequiredInMb": 1024,
    }
    assert [components[m]["RuntimeConfig"]["CopyCount"] for m in ("llama", "rank", "embed")] == [
        8,
        8,
        8,
    ]
    assert {c["InferenceComponentName"] for c in components.values()} == {
        "r1-d1-llama",
        "r1-d1-rank",
        "r1-d1-embed",
    }
    assert api_problems(result) == []


def test_every_request_is_tagged_with_the_request() -> None:
    result = plan("llama=18gb", layout=ARTICLE)
    tags = [
        {"Key": "gpu-bot:request", "Value": "R1"},
        {"Key": "gpu-bot:deployment", "Value": "R1-d1"},
    ]
    assert all(params["Tags"] == tags for _, params in result.requests())


def test_one_g_ten_gb_on_p4d_brings_the_newer_inference_image() -> None:
    result = plan("embed=9gbx4", layout=("mig-1g.10gb", "mig-1g.10gb"))
    assert result.valid, result.errors
    (variant,) = result.endpoint_config_params()["ProductionVariants"]
    assert variant["InferenceAmiVersion"] == RECOMMENDED_AMI
    assert any("InferenceAmiVersion" in n for n in result.notes)
    assert api_problems(result) == []


def test_without_a_layout_the_planner_picks_one() -> None:
    result = plan("llama=18gb", "embed=4gbx2", "rank=9gbx3")
    assert result.valid, result.errors
    assert result.layout is not None
    assert any(n.startswith("layout chosen by the planner") for n in result.notes)
    by_model = {c.model: c.partition_type for c in result.components}
    assert by_model == {"llama": "mig-3g.20gb", "embed": "mig-1g.5gb", "rank": "mig-2g.10gb"}
    assert api_problems(result) == []


def test_the_planner_counts_every_instance() -> None:
    # 16 copies of 18 GB: one p4d has 8 GPUs, each holds at most two 20 GB partitions
    # (3g.20gb x2); nine per GPU are impossible, so 24 copies need two instances.
    assert not plan("llama=18gbx24").valid
    assert plan("llama=18gbx24", instance_count=2).valid


def test_whole_gpus_on_an_instance_without_mig() -> None:
    trn_plan = ReservedPlan(ARN, "ml.trn1.32xlarge", 1, "Active", ("endpoint",))
    result = plan("llama=60gbx2", instance=TRN1, plan=trn_plan)
    assert result.valid, result.errors
    assert not result.partitioned
    (component,) = result.components
    assert component.partition_type is None and component.devices == 2
    (variant,) = result.endpoint_config_params()["ProductionVariants"]
    assert "AcceleratorPartitionLayouts" not in variant
    assert api_problems(result) == []


def test_whole_gpus_when_asked_on_a_mig_gpu() -> None:
    result = plan("big=70gb", "small=10gbx2", whole_gpus=True)
    assert result.valid, result.errors
    assert {c.model: c.devices for c in result.components} == {"big": 2, "small": 1}


def test_no_plan_means_on_demand_and_says_so() -> None:
    result = plan("llama=18gb", plan=None)
    (variant,) = result.endpoint_config_params()["ProductionVariants"]
    assert "CapacityReservationConfig" not in variant
    assert any("On-Demand" in n for n in result.notes)


def test_a_plan_known_only_by_its_arn_lists_what_was_not_checked() -> None:
    result = plan("llama=18gb", plan=ReservedPlan(ARN))
    assert result.valid
    assert any(n.startswith("not checked against the plan") for n in result.notes)


def test_long_names_stay_valid_and_distinct() -> None:
    long = "x" * 60
    assert entity_name(long) == long
    a, b = entity_name(long + "-model-a"), entity_name(long + "-model-b")
    assert a != b and len(a) == len(b) == 63
    result = plan("Llama_3.1-8b=18gb", endpoint_name="e" * 60)
    assert result.components[0].name.startswith("e" * 50)
    # the model name itself breaks SageMaker's name pattern: the API model says so
    assert any("modelname" in p.lower() for p in api_problems(result))


# --- refusals, each by its rule -------------------------------------------------------


@pytest.mark.parametrize("status", ["Pending", "Scheduled", "Expired", "Failed"])
def test_a_plan_that_is_not_active(status: str) -> None:
    result = plan("llama=18gb", plan=PLAN.__class__(**{**PLAN.__dict__, "status": status}))
    assert rules(result) == [Rule.PLAN_NOT_ACTIVE]
    assert status in result.errors[0].message
    assert result.to_json()["endpoint_config"] is None


def test_a_plan_for_training_jobs_only() -> None:
    training = ReservedPlan(ARN, "ml.p4d.24xlarge", 2, "Active", ("training-job",))
    assert rules(plan("llama=18gb", plan=training)) == [Rule.PLAN_NOT_FOR_ENDPOINTS]


def test_an_instance_type_other_than_the_plans() -> None:
    result = plan("llama=18gb", instance=P5)
    assert rules(result) == [Rule.INSTANCE_TYPE_DIFFERS]
    assert "ml.p4d.24xlarge" in result.errors[0].message


def test_more_instances_than_the_plan_holds() -> None:
    assert rules(plan("llama=18gb", instance_count=3)) == [Rule.MORE_INSTANCES_THAN_PLAN]


def test_a_layout_the_rules_reject() -> None:
    result = plan("llama=18gb", layout=("mig-4g.20gb", "mig-4g.20gb"))
    assert set(rules(result)) == {Rule.LAYOUT_REJECTED}


def test_more_copies_than_partitions_of_that_type() -> None:
    result = plan("llama=18gbx9", layout=ARTICLE)
    assert rules(result) == [Rule.MORE_COPIES_THAN_PARTITIONS]
    assert "8 x mig-4g.20gb" in result.errors[0].message


def test_copies_left_after_larger_models_are_counted() -> None:
    # both fit only mig-4g.20gb; 8 partitions in all, 5 + 5 asked
    result = plan("a=18gbx5", "b=17gbx5", layout=ARTICLE)
    assert rules(result) == [Rule.MORE_COPIES_THAN_PARTITIONS]
    assert "3 left after larger models" in result.errors[0].message


def test_a_model_that_needs_a_whole_gpu_on_a_partitioned_endpoint() -> None:
    result = plan("big=60gb", "small=4gb", layout=ARTICLE)
    assert rules(result) == [Rule.WHOLE_GPU_ON_PARTITIONED]
    assert "2 whole GPUs" in result.errors[0].message


def test_a_whole_gpu_model_without_a_layout_is_refused_by_the_planner() -> None:
    assert rules(plan("big=60gb")) == [Rule.WHOLE_GPU_ON_PARTITIONED]


def test_a_layout_without_a_partition_big_enough() -> None:
    result = plan("llama=18gb", layout=("mig-2g.10gb", "mig-1g.5gb"))
    assert rules(result) == [Rule.NO_PARTITION_HOLDS_MODEL]
    assert "mig-3g.20gb" in result.errors[0].message


def test_more_whole_gpu_copies_than_the_instances_hold() -> None:
    result = plan("big=70gbx5", whole_gpus=True)  # 5 x 2 GPUs on one 8-GPU instance
    assert rules(result) == [Rule.MORE_COPIES_THAN_GPUS]


def test_an_endpoint_name_already_taken() -> None:
    result = plan("llama=18gb", taken_endpoints=frozenset({"r1-d1"}))
    assert rules(result) == [Rule.ENDPOINT_NAME_TAKEN]
    result = plan("llama=18gb", taken_configs=frozenset({"r1-d1"}))
    assert rules(result) == [Rule.ENDPOINT_NAME_TAKEN]


def test_every_broken_rule_is_reported_at_once() -> None:
    expired = ReservedPlan(ARN, "ml.p5.48xlarge", 1, "Expired", ("training-job",))
    result = plan("llama=18gbx9", plan=expired, instance_count=2, layout=ARTICLE)
    assert set(rules(result)) == {
        Rule.PLAN_NOT_ACTIVE,
        Rule.PLAN_NOT_FOR_ENDPOINTS,
        Rule.INSTANCE_TYPE_DIFFERS,
        Rule.MORE_INSTANCES_THAN_PLAN,
    }


def test_bad_input_raises_instead_of_refusing() -> None:
    with pytest.raises(UnknownProfile):
        plan("llama=18gb", layout=("mig-9g.99gb",))
    with pytest.raises(ModelError):
        plan("a=1gb", "a=2gb")


# --- cost per model -------------------------------------------------------------------


def test_cost_per_model_follows_the_compute_slices_held() -> None:
    result = plan("llama=18gbx8", "embed=4gbx8", layout=ARTICLE, instance_count=2)
    costs = {c.model: c for c in result.costs}
    # 2 instances x 8 GPUs x 7 slices = 112; llama holds 8 x 4, embed 8 x 1
    assert costs["llama"].share == pytest.approx(32 / 112)
    assert costs["embed"].share == pytest.approx(8 / 112)
    assert costs[IDLE].share == pytest.approx(72 / 112)
    # the plan: $480 for 24 h of 2 instances = $10/instance-hour; 2 instances = $20/h
    assert costs["llama"].reserved_usd_per_hour == pytest.approx(20 * 32 / 112, abs=1e-3)
    assert sum(c.share for c in result.costs) == pytest.approx(1)
