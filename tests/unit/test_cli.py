from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bot.cli import main


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("catalog", "config"):
        assert command in out


def test_console_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "catalog", "p5.48xlarge", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(done.stdout)
    assert data[0]["instance_type"] == "p5.48xlarge"
    assert data[0]["prices"]["on-demand"]["usd_per_hour"] == 55.04


def test_catalog_unknown_type_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "p5.48xlarg"]) == 2
    assert "closest known: p5.48xlarge" in capsys.readouterr().err
