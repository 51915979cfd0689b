"""`gpu-bot deploy plan`: the JSON contract, readable output and exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.adapters.aws.request_check import request_problems
from bot.cli import main

ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/r1-plan"
ROLE = "arn:aws:iam::123456789012:role/sagemaker"
ARTICLE = ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["deploy", "plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *argv, "--json")
    assert err == ""
    return code, json.loads(out)


def test_a_valid_plan_prints_the_requests(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(
        capsys,
        "ml.p4d.24xlarge",
        "--model", "llama=18gbx8",
        "--model", "embed=4gbx8",
        "--layout", *ARTICLE,
        "--plan-arn", ARN,
        "--count", "1",
        "--role-arn", ROLE,
        "--name", "launch",
    )  # fmt: skip
    assert code == 0
    assert set(data) >= {"valid", "errors", "endpoint_config", "inference_components"}
    assert data["valid"] is True and data["errors"] == []
    config = data["endpoint_config"]
    (variant,) = config["ProductionVariants"]
    assert variant["CapacityReservationConfig"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "MlReservationArn": ARN,
    }
    assert variant["AcceleratorPartitionLayouts"] == [{"AcceleratorPartitionTypes": ARTICLE}]
    assert [c["InferenceComponentName"] for c in data["inference_components"]] == [
        "launch-llama",
        "launch-embed",
    ]
    assert request_problems("sagemaker", "CreateEndpointConfig", config) == []
    for component in data["inference_components"]:
        assert request_problems("sagemaker", "CreateInferenceComponent", component) == []


def test_without_a_layout_the_planner_picks(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(
        capsys, "p4d.24xlarge", "--model", "llama=18gb", "--model", "e=4gbx2", "--role-arn", ROLE
    )
    assert code == 0
    assert data["layout_per_gpu"]
    assert any(n.startswith("layout chosen by the planner") for n in data["notes"])


def test_a_refusal_exits_1_and_names_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(
        capsys, "p4d.24xlarge", "--model", "llama=18gbx9", "--layout", *ARTICLE, "--role-arn", ROLE
    )
    assert code == 1
    assert data["valid"] is False
    assert [e["rule"] for e in data["errors"]] == ["more-copies-than-partitions"]
    assert data["endpoint_config"] is None and data["inference_components"] == []


def test_a_plan_without_the_execution_role_it_needs_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, data = run_json(capsys, "p4d.24xlarge", "--model", "llama=18gb", "--plan-arn", ARN)
    assert code == 1 and data["valid"] is False
    assert [e["rule"] for e in data["errors"]] == ["no-execution-role"]
    assert "ExecutionRoleArn" in data["errors"][0]["message"]
    assert not [n for n in data["notes"] if "role" in n]  # said once, as the refusal


def test_a_refused_plan_shows_no_share_of_an_endpoint_that_cannot_be_made(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Twenty 30 GB copies on whole GPUs need 2.5 instances: no share adds up.
    argv = ["p4d.24xlarge", "--model", "llama=30gbx20", "--whole-gpus", "--role-arn", ROLE]
    code, out, _ = run(capsys, *argv)
    assert code == 1 and "[more-copies-than-gpus]" in out
    assert "%" not in out and "cost per model" not in out
    code, data = run_json(capsys, *argv)
    assert data["cost_per_model"] == []


def test_a_name_the_api_rejects_is_a_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "p4d.24xlarge", "--model", "llama_3=18gb", "--role-arn", ROLE)
    assert code == 1
    assert [e["rule"] for e in data["errors"]] == ["sagemaker-api-model"]


def test_readable_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "p4d.24xlarge", "--model", "llama=18gbx9", "--layout", *ARTICLE)
    assert code == 1
    assert "for endpoint gpu-bot-endpoint: refused" in out
    assert "[more-copies-than-partitions]" in out
    code, out, _ = run(
        capsys, "p4d.24xlarge", "--model", "llama=18gb", "--plan-arn", ARN, "--role-arn", ROLE
    )
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("CreateEndpointConfig {") for line in lines)
    (ic,) = [line for line in lines if line.startswith("CreateInferenceComponent ")]
    assert json.loads(ic.split(" ", 1)[1])["Specification"]["ModelName"] == "llama"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["p9.huge", "--model", "a=1gb"], 'unknown instance type "p9.huge"'),
        (["p4d.24xlarge", "--model", "a"], 'cannot read model "a"'),
        (["p4d.24xlarge", "--model", "a=1gb", "--layout", "9g.99gb"], "unknown MIG profile"),
        (["p4d.24xlarge", "--model", "a=1gb", "--count", "0"], "--count must be at least 1"),
        (["p4d.24xlarge", "--model", "a=1gb", "--plan-arn", "plan-1"], "is not a SageMaker ARN"),
        (
            ["p4d.24xlarge", "--model", "a=1gb", "--layout", "1g.5gb", "--whole-gpus"],
            "exclude each other",
        ),
        (["p4d.24xlarge", "--model", "a=1gb", "--model", "a=2gb"], "each model once"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err


def test_a_trainium_device_is_not_called_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "ml.trn1.32xlarge", "--model", "llama=20gb", "--whole-gpus", "--role-arn", ROLE
    )
    assert code == 0
    assert "1 Trainium device " in out and "whole GPU" not in out
