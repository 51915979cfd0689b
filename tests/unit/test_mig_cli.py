"""`gpu-bot mig check` and `gpu-bot mig plan`: output, JSON and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bot.cli import main

ARTICLE = ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]
LAYOUTS = (
    'AcceleratorPartitionLayouts=[{"AcceleratorPartitionTypes": '
    '["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]}]'
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["mig", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, *argv, "--json")
    return code, json.loads(out)


def test_help_lists_mig(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mig", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "check" in out and "plan" in out


# --- check ----------------------------------------------------------------------------


def test_check_the_article_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "p4d.24xlarge", "4g.20gb", "2g.10gb", "1g.5gb")
    assert code == 0 and err == ""
    assert "p4d.24xlarge (8x A100 40GB): valid MIG layout" in out
    assert "partitions: 3 per GPU, 24 per endpoint of 1 instance" in out
    assert "unused per GPU: 0 of 7 compute slices, 1 of 8 memory slices" in out
    assert LAYOUTS in out.splitlines()
    assert (
        '  ComputeResourceRequirements={"AcceleratorPartitionType": "mig-1g.5gb", '
        '"NumberOfAcceleratorDevicesRequired": 1}'
    ) in out.splitlines()


def test_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "check", "ml.p4d.24xlarge", *ARTICLE, "--count", "2")
    assert code == 0
    assert data["valid"] is True and data["errors"] == []
    assert (data["partitions_per_gpu"], data["partitions_total"]) == (3, 48)
    assert data["AcceleratorPartitionLayouts"] == [{"AcceleratorPartitionTypes": ARTICLE}]
    assert data["ComputeResourceRequirements"]["mig-4g.20gb"] == {
        "AcceleratorPartitionType": "mig-4g.20gb",
        "NumberOfAcceleratorDevicesRequired": 1,
    }


def test_check_invalid_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "check", "p4d.24xlarge", "3g.20gb", "3g.20gb", "1g.5gb")
    assert code == 1
    assert data["valid"] is False and len(data["errors"]) == 1
    # An invalid layout makes no partitions: none are counted.
    assert data["partitions_per_gpu"] is None and data["partitions_total"] is None
    assert data["AcceleratorPartitionLayouts"] is None


def test_check_eight_partitions_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "p5.48xlarge", *["1g.10gb"] * 8)
    assert code == 1
    assert "  - 8 partitions per GPU; an H100 80GB takes at most 7" in out
    assert "partitions:" not in out  # an invalid layout has none to count


def test_check_driver_rule_and_ami(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "p4d.24xlarge", "1g.10gb")
    assert code == 1
    assert "InferenceAmiVersion=al2023-ami-sagemaker-inference-gpu-4-1" in out
    ami = "al2023-ami-sagemaker-inference-gpu-4-1"
    code, out, _ = run(capsys, "check", "p4d.24xlarge", "1g.10gb", "--ami", ami)
    assert code == 0
    assert f'InferenceAmiVersion="{ami}"' in out


def test_check_endpoint_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "check", "p4d.24xlarge", *ARTICLE, "--endpoint", "serverless")
    assert code == 1
    assert "inference components" in data["errors"][0]


def test_check_labels_the_rtx_pro_tables(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "g7.2xlarge", "1g.16gb", "1g.16gb")
    assert code == 0
    assert "note: partition limits from the source article" in out


def test_user_text_is_not_rich_markup(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "p4d.24xlarge", "1g.5gb", "--ami", "[bold]x[/bold]")
    assert code == 1
    assert '"[bold]x[/bold]"' in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "p4d.24xlarge", "4g.20gb", "5g.30gb"], 'unknown MIG profile "mig-5g.30gb"'),
        (["check", "p4d.24xlarg", "4g.20gb"], 'unknown instance type "p4d.24xlarg"'),
        (["check", "p4d.24xlarge", "4g.20gb", "--count", "0"], "--count must be at least 1"),
        (["plan", "p4d.24xlarge", "--model", "llama=18"], 'cannot read model "llama=18"'),
        (["plan", "p4d.24xlarge", "--model", "a=1gb", "--model", "a=2gb"], "each model once"),
        (["plan", "g5.xlarg", "--model", "a=1gb"], 'unknown instance type "g5.xlarg"'),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("gpu-bot: ") and message in err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "p4d.24xlarge"],
        ["plan", "p4d.24xlarge"],
        ["check", "p4d.24xlarge", "1g.5gb", "--endpoint", "x"],
    ],
)
def test_argparse_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mig", *argv])
    assert info.value.code == 2


# --- plan -----------------------------------------------------------------------------


def test_plan_the_issue_example(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "p4d.24xlarge", "--model", "llama=18gb", "--model", "embed=4gbx2")
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    lines = out.splitlines()
    head = (
        "p4d.24xlarge (8x A100 40GB): mig-3g.20gb + mig-2g.10gb + mig-1g.5gb + mig-1g.5gb per GPU"
    )
    assert lines[0] == head
    assert "chargeback by compute slices held of 21.96 USD/h (estimate):" in lines
    assert any(line.split()[:4] == ["llama", "3", "5.4%", "1.1764"] for line in lines)
    assert any(line.startswith("AcceleratorPartitionLayouts=") for line in lines)


def test_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "p4d.24xlarge", "--model", "llama=18gb", "--model", "embed=4gbx2")
    code, data = run_json(capsys, *argv)
    assert code == 0 and data["fits"] is True
    assert data["layout_per_gpu"] == ["mig-3g.20gb", "mig-2g.10gb", "mig-1g.5gb", "mig-1g.5gb"]
    assert data["check"]["valid"] is True
    assert [a["model"] for a in data["assignments"]] == ["llama", "embed"]
    assert data["assignments"][1]["ComputeResourceRequirements"]["AcceleratorPartitionType"] == (
        "mig-1g.5gb"
    )
    shares = {c["model"]: c["usd_per_hour"] for c in data["chargeback"]}
    assert sum(shares.values()) == pytest.approx(21.96, abs=1e-3)
    assert data["price"]["estimate"] is True


def test_plan_nothing_fits_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "p4d.24xlarge", "--model", "big=90gb")
    assert code == 1
    assert "p4d.24xlarge (8x A100 40GB): no MIG layout fits" in out
    assert "whole GPUs" in out
    assert "what would:" in out and "a bigger profile: big fits mig-3g.90gb" in out


def test_plan_nothing_fits_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "plan", "g5.xlarge", "--model", "embed=4gb")
    assert code == 1
    assert data["fits"] is False and data["check"] is None and data["assignments"] == []
    assert data["reasons"] == ["g5.xlarge (A10G) has no MIG partition profiles"]
    assert data["suggestions"]


def test_console_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "mig", "check", "p4d.24xlarge", *ARTICLE, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["partitions_total"] == 24


@pytest.mark.parametrize("layout", [["1g.5gbx7"], ["1g.5gb", "x7"], ["mig-1g.5gb", "X7"]])
def test_check_reads_repeats_as_plan_reads_copies(
    capsys: pytest.CaptureFixture[str], layout: list[str]
) -> None:
    assert main(["mig", "check", "p4d.24xlarge", *layout, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profiles"] == ["mig-1g.5gb"] * 7
    for model in (["llama=4gbx7"], ["llama=4gb", "x7"]):
        assert main(["mig", "plan", "p4d.24xlarge", "--model", *model, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert [a["copies"] for a in plan["assignments"]] == [7]


@pytest.mark.parametrize(("action", "positional"), [("check", "PROFILE"), ("plan", "instance")])
def test_each_actions_help_shows_its_positional_arguments(
    capsys: pytest.CaptureFixture[str], action: str, positional: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mig", action, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "positional arguments:" in out and "instance" in out and positional in out
