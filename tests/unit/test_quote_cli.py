"""`gpu-bot quote`: the JSON contract and exit statuses."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from bot.cli import main

KINDS = ["on-demand", "spot", "capacity-block", "training-plan", "on-demand-reservation"]


@pytest.fixture(autouse=True)
def _sandbox(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for name in ("GPU_BOT_AWS", "REDIS_URL", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_json_has_request_options_and_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["quote", "2x", "p5.48xlarge", "3d", "from", "tomorrow", "ec2", "util=50%", "--json"]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["request"]["count"] == 2
    assert data["request"]["instance_type"] == "p5.48xlarge"
    assert [o["kind"] for o in data["options"]] == KINDS
    for option in data["options"]:
        assert {"eligible", "reasons", "total_usd", "hourly_usd"} <= option.keys()
    block = next(o for o in data["options"] if o["kind"] == "capacity-block")
    assert block["eligible"] is True
    assert 0 < block["break_even_utilization"] < 1
    assert block["offering_id"] and block["start"] and block["end"]
    od = next(o for o in data["options"] if o["kind"] == "on-demand")
    assert od["total_usd"] == pytest.approx(55.04 * 2 * 72 * 0.5, abs=0.01)
    assert "break_even_utilization" not in od
    assert data["recommendation"]["kind"] == "on-demand"  # 50% is below the 63% break-even
    assert data["recommendation"]["reasons"]


def test_readable_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quote", "2x", "p5.48xlarge", "3d", "from", "tomorrow"]) == 0
    out = capsys.readouterr().out
    # The table has every option, each with its total or why it is not possible ...
    for label in ("On-Demand", "Spot", "Capacity Block", "Training plan"):
        assert label in out
    assert "$4,983.55" in out and "$2,179.58" in out
    # ... and the recommendation names the pick and gives reasons with figures.
    recommendation = out[out.index("Recommendation:") :]
    first, *reasons = recommendation.splitlines()
    assert first == "Recommendation: Training plan"
    assert reasons and "costs $2,179.58 against" in reasons[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["2x", "p5.48xlarg", "3d", "from", "tomorrow"], 'unknown instance type "p5.48xlarg"'),
        (["2x", "p5.48xlarge"], "missing duration, start"),
        (["2x", "p5.48xlarge", "3d", "from", "2020-01-01"], "in the past"),
    ],
)
def test_bad_input_exits_2_with_the_grammar_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["quote", *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_chart_writes_a_png_beside_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "costs.png"
    assert main(["quote", "2x", "p5.48xlarge", "3d", "from", "tomorrow", "--chart", str(path)]) == 0
    png = path.read_bytes()
    assert png.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert (width, height) == (800, 450)
    assert "Recommendation:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("missing/costs.png", 1, "cannot write the chart to {path}: No such file or directory"),
        ("costs.jpg", 2, "--chart writes a PNG: give a file name ending .png, not '{path}'"),
    ],
)
def test_a_chart_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, code: int, message: str
) -> None:
    path = tmp_path / name
    args = ["quote", "2x", "p5.48xlarge", "3d", "from", "tomorrow", "--chart", str(path)]
    assert main(args) == code
    captured = capsys.readouterr()
    assert captured.err == f"gpu-bot: {message.format(path=path)}\n"
    assert captured.out == ""
    assert not path.exists()


def test_sandbox_figures_priced_from_catalog_estimates_are_marked_estimates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The sandbox prices p5 plans from the catalog's derived figure (On-Demand x 0.275),
    # and p5 On-Demand and blocks from the source article's published ones.
    code = main(["quote", "1x", "p5.48xlarge", "2d", "from", "tomorrow", "sagemaker", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    sources = {o["kind"]: o["price_source"] for o in data["options"] if o["eligible"]}
    assert sources["training-plan"] == "sandbox: SearchTrainingPlanOfferings (estimate)"
    assert data["recommendation"]["kind"] == "training-plan"
    assert any("price is an estimate" in w for w in data["recommendation"]["warnings"])
    main(["quote", "2x", "p5.48xlarge", "3d", "from", "tomorrow", "ec2", "--json"])
    data = json.loads(capsys.readouterr().out)
    block = next(o for o in data["options"] if o["kind"] == "capacity-block")
    assert block["price_source"] == "sandbox: DescribeCapacityBlockOfferings"


def test_billed_hours_in_json_are_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    main(["quote", "1x", "p5.48xlarge", "3d", "from", "tomorrow", "ec2", "util=60%", "--json"])
    data = json.loads(capsys.readouterr().out)
    (on_demand,) = [o for o in data["options"] if o["kind"] == "on-demand"]
    assert on_demand["billed_hours"] == 43.2  # 72 h at 60%, not 43.199999999999996
