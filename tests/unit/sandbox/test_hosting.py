"""The sandbox's SageMaker hosting (models, endpoint configs, endpoints, inference
components) through a real boto3 client: states on the sandbox clock, and AWS's rules for
endpoints on training plans and MIG partitions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from aws_sandbox.hosting import DEMO_MODELS
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.mig import RECOMMENDED_AMI

ROLE = "arn:aws:iam::123456789012:role/sagemaker"
ARTICLE = ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]
TAGS = [{"Key": "gpu-bot:request", "Value": "R1"}]


@pytest.fixture
def sm(market: SandboxMarket) -> Any:
    return sandbox_clients(market, "us-east-1").sagemaker


def buy_plan(
    sm: Any,
    clock: ManualClock,
    name: str = "plan-1",
    instance: str = "ml.p4d.24xlarge",
    count: int = 2,
    targets: tuple[str, ...] = ("endpoint",),
    activate: bool = True,
) -> str:
    offer = sm.search_training_plan_offerings(
        InstanceType=instance, InstanceCount=count, DurationHours=48, TargetResources=list(targets)
    )["TrainingPlanOfferings"][0]
    arn: str = sm.create_training_plan(
        TrainingPlanName=name, TrainingPlanOfferingId=offer["TrainingPlanOfferingId"]
    )["TrainingPlanArn"]
    if activate:
        start = offer["ReservedCapacityOfferings"][0]["StartTime"]
        clock.set(max(start, clock.now()) + timedelta(minutes=5))
        assert sm.describe_training_plan(TrainingPlanName=name)["Status"] == "Active"
    return arn


def variant(plan_arn: str | None, **extra: Any) -> dict[str, Any]:
    v: dict[str, Any] = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.p4d.24xlarge",
        "InitialInstanceCount": 1,
    }
    if plan_arn:
        v["CapacityReservationConfig"] = {
            "CapacityReservationPreference": "capacity-reservations-only",
            "MlReservationArn": plan_arn,
        }
    return v | extra


def config(sm: Any, name: str, *variants: dict[str, Any], role: str | None = ROLE) -> None:
    params: dict[str, Any] = {"EndpointConfigName": name, "ProductionVariants": list(variants)}
    if role:
        params["ExecutionRoleArn"] = role
    sm.create_endpoint_config(**params, Tags=TAGS)


def component(sm: Any, name: str, endpoint: str, partition: str | None, copies: int) -> None:
    needs: dict[str, Any] = {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}
    if partition:
        needs["AcceleratorPartitionType"] = partition
    sm.create_inference_component(
        InferenceComponentName=name,
        EndpointName=endpoint,
        VariantName="AllTraffic",
        Specification={"ModelName": "llama-3-8b", "ComputeResourceRequirements": needs},
        RuntimeConfig={"CopyCount": copies},
        Tags=TAGS,
    )


def error_of(info: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = info.value.response["Error"]
    return error["Code"], error["Message"]


def status(sm: Any, endpoint: str) -> str:
    result: str = sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"]
    return result


def in_service_endpoint(sm: Any, clock: ManualClock, layout: list[str] | None = ARTICLE) -> str:
    arn = buy_plan(sm, clock)
    extra = (
        {"AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": layout}]} if layout else {}
    )
    config(sm, "ep", variant(arn, **extra))
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep", Tags=TAGS)
    clock.advance(timedelta(minutes=7))
    assert status(sm, "ep") == "InService"
    return arn


# --- models -----------------------------------------------------------------------------


def test_demo_models_are_listed_and_new_ones_added(sm: Any) -> None:
    assert {m["ModelName"] for m in sm.list_models()["Models"]} == set(DEMO_MODELS)
    sm.create_model(ModelName="mine", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    assert sm.describe_model(ModelName="mine")["ModelName"] == "mine"
    with pytest.raises(ClientError) as info:
        sm.create_model(ModelName="mine", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    assert error_of(info)[1].startswith("Cannot create already existing model")
    names = [m["ModelName"] for m in sm.list_models(SortBy="Name", SortOrder="Ascending")["Models"]]
    assert names == sorted(names)
    sm.delete_model(ModelName="mine")
    with pytest.raises(ClientError) as info:
        sm.describe_model(ModelName="mine")
    assert error_of(info) == ("ValidationException", 'Could not find model "mine".')


# --- endpoint configurations --------------------------------------------------------------


def test_a_config_on_an_active_plan_is_stored_as_sent(sm: Any, clock: ManualClock) -> None:
    arn = buy_plan(sm, clock)
    sent = variant(arn, AcceleratorPartitionLayouts=[{"AcceleratorPartitionTypes": ARTICLE}])
    config(sm, "ep", sent)
    assert sm.describe_endpoint_config(EndpointConfigName="ep")["ProductionVariants"] == [sent]
    arn_of = sm.describe_endpoint_config(EndpointConfigName="ep")["EndpointConfigArn"]
    assert sm.list_tags(ResourceArn=arn_of)["Tags"] == TAGS


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"InstanceType": "ml.p5.48xlarge"}, "reserves ml.p4d.24xlarge"),
        (
            {"AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": ["mig-4g.20gb"] * 2}]},
            "do not fit together",
        ),
        (
            {"AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": ["mig-1g.5gb"]}] * 2},
            "exactly one accelerator partition layout",
        ),
        (
            {
                "ModelName": "llama-3-8b",
                "AcceleratorPartitionLayouts": [{"AcceleratorPartitionTypes": ["mig-1g.5gb"]}],
            },
            "only for endpoints built from inference components",
        ),
    ],
)
def test_config_rules(sm: Any, clock: ManualClock, change: dict[str, Any], message: str) -> None:
    arn = buy_plan(sm, clock)
    with pytest.raises(ClientError) as info:
        config(sm, "ep", variant(arn, **change))
    code, text = error_of(info)
    assert code == "ValidationException" and message in text


def test_a_config_needs_a_plan_that_exists_and_targets_endpoints(
    sm: Any, clock: ManualClock
) -> None:
    missing = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nope"
    with pytest.raises(ClientError) as info:
        config(sm, "ep", variant(missing))
    assert "does not exist" in error_of(info)[1]
    training = buy_plan(sm, clock, "train", targets=("training-job",))
    with pytest.raises(ClientError) as info:
        config(sm, "ep", variant(training))
    assert "does not reserve capacity for endpoints" in error_of(info)[1]


def test_inference_component_endpoints_need_a_role(sm: Any, clock: ManualClock) -> None:
    with pytest.raises(ClientError) as info:
        config(sm, "ep", variant(buy_plan(sm, clock)), role=None)
    assert "ExecutionRoleArn" in error_of(info)[1]


# --- endpoints ------------------------------------------------------------------------------


def test_an_endpoint_comes_up_on_the_clock_and_ends_with_its_plan(
    sm: Any, clock: ManualClock
) -> None:
    arn = buy_plan(sm, clock)
    config(
        sm, "ep", variant(arn, AcceleratorPartitionLayouts=[{"AcceleratorPartitionTypes": ARTICLE}])
    )
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep", Tags=TAGS)
    assert status(sm, "ep") == "Creating"
    clock.advance(timedelta(minutes=6))
    assert status(sm, "ep") == "Creating"  # partitioning adds 17 s
    clock.advance(timedelta(seconds=17))
    assert status(sm, "ep") == "InService"
    with pytest.raises(ClientError) as info:
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
    assert "Cannot create already existing endpoint" in error_of(info)[1]
    end = sm.describe_training_plan(TrainingPlanName="plan-1")["EndTime"]
    clock.set(end)
    described = sm.describe_endpoint(EndpointName="ep")
    assert described["EndpointStatus"] == "OutOfService"
    assert "Expired" in described["FailureReason"]


def test_an_endpoint_needs_an_active_plan_with_instances_left(sm: Any, clock: ManualClock) -> None:
    scheduled = buy_plan(sm, clock, "later", activate=False)
    config(sm, "early", variant(scheduled))
    with pytest.raises(ClientError) as info:
        sm.create_endpoint(EndpointName="early", EndpointConfigName="early")
    assert "an endpoint can use only an Active training plan" in error_of(info)[1]

    arn = buy_plan(sm, clock, "two")  # 2 instances
    config(sm, "a", variant(arn, InitialInstanceCount=2))
    sm.create_endpoint(EndpointName="a", EndpointConfigName="a")
    config(sm, "b", variant(arn))
    with pytest.raises(ClientError) as info:
        sm.create_endpoint(EndpointName="b", EndpointConfigName="b")
    assert error_of(info)[0] == "ResourceLimitExceeded"


def test_one_g_ten_gb_on_p4d_fails_without_the_newer_image(sm: Any, clock: ManualClock) -> None:
    arn = buy_plan(sm, clock)
    layout = [{"AcceleratorPartitionTypes": ["mig-1g.10gb"] * 4}]
    config(sm, "old", variant(arn, AcceleratorPartitionLayouts=layout))
    config(
        sm,
        "new",
        variant(arn, AcceleratorPartitionLayouts=layout, InferenceAmiVersion=RECOMMENDED_AMI),
    )
    sm.create_endpoint(EndpointName="old", EndpointConfigName="old")
    sm.create_endpoint(EndpointName="new", EndpointConfigName="new")
    clock.advance(timedelta(minutes=7))
    old = sm.describe_endpoint(EndpointName="old")
    assert old["EndpointStatus"] == "Failed"
    assert "mig-1g.10gb" not in old["FailureReason"]  # AWS's message does not name it
    assert status(sm, "new") == "InService"


# --- inference components -------------------------------------------------------------------


def test_components_take_partitions_of_their_type(sm: Any, clock: ManualClock) -> None:
    in_service_endpoint(sm, clock)
    component(sm, "big", "ep", "mig-4g.20gb", 8)
    described = sm.describe_inference_component(InferenceComponentName="big")
    assert described["InferenceComponentStatus"] == "Creating"
    clock.advance(timedelta(minutes=3))
    described = sm.describe_inference_component(InferenceComponentName="big")
    assert described["InferenceComponentStatus"] == "InService"
    assert described["RuntimeConfig"]["CurrentCopyCount"] == 8
    with pytest.raises(ClientError) as info:
        component(sm, "more", "ep", "mig-4g.20gb", 1)  # 8 GPUs x one 4g each: all taken
    assert error_of(info)[0] == "ResourceLimitExceeded"
    component(sm, "small", "ep", "mig-1g.5gb", 8)
    listed = sm.list_inference_components(EndpointNameEquals="ep")["InferenceComponents"]
    assert {c["InferenceComponentName"] for c in listed} == {"big", "small"}


@pytest.mark.parametrize(
    ("partition", "devices", "message"),
    [
        (None, 1, "AcceleratorPartitionType is required"),
        ("mig-3g.20gb", 1, "is not in the endpoint's layout"),
        ("mig-4g.20gb", 2, "must be 1"),
    ],
)
def test_component_rules_on_a_partitioned_endpoint(
    sm: Any, clock: ManualClock, partition: str | None, devices: int, message: str
) -> None:
    in_service_endpoint(sm, clock)
    needs: dict[str, Any] = {
        "NumberOfAcceleratorDevicesRequired": devices,
        "MinMemoryRequiredInMb": 1024,
    }
    if partition:
        needs["AcceleratorPartitionType"] = partition
    with pytest.raises(ClientError) as info:
        sm.create_inference_component(
            InferenceComponentName="c",
            EndpointName="ep",
            VariantName="AllTraffic",
            Specification={"ModelName": "llama-3-8b", "ComputeResourceRequirements": needs},
            RuntimeConfig={"CopyCount": 1},
        )
    assert message in error_of(info)[1]


def test_components_wait_for_the_endpoint(sm: Any, clock: ManualClock) -> None:
    arn = buy_plan(sm, clock)
    config(sm, "ep", variant(arn))
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
    with pytest.raises(ClientError) as info:
        component(sm, "c", "ep", None, 1)
    assert "is Creating" in error_of(info)[1]


# --- deletion --------------------------------------------------------------------------------


def test_deletion_order_and_names_free_again(sm: Any, clock: ManualClock) -> None:
    in_service_endpoint(sm, clock)
    component(sm, "c", "ep", "mig-1g.5gb", 1)
    with pytest.raises(ClientError) as info:
        sm.delete_endpoint(EndpointName="ep")
    assert "delete them first" in error_of(info)[1]
    sm.delete_inference_component(InferenceComponentName="c")
    assert (
        sm.describe_inference_component(InferenceComponentName="c")["InferenceComponentStatus"]
        == "Deleting"
    )
    clock.advance(timedelta(minutes=1))
    sm.delete_endpoint(EndpointName="ep")
    assert status(sm, "ep") == "Deleting"
    clock.advance(timedelta(minutes=2))
    with pytest.raises(ClientError) as info:
        sm.describe_endpoint(EndpointName="ep")
    assert error_of(info)[1] == 'Could not find endpoint "ep".'
    sm.delete_endpoint_config(EndpointConfigName="ep")
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    # the name is free again: a new generation
    config(sm, "ep", variant(None))
    assert [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]] == [
        "ep"
    ]
