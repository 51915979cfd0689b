"""How the bot words what it prints: one rule for counted nouns, one spelling of
utilisation, help text printed as written, and output cut short by its reader."""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys

import pytest

from bot.blocks.help import help_blocks
from bot.blocks.modals import reserve_form
from bot.cli import build_parser, main
from bot.domain.grammar import RequestSyntaxError, parse_request
from bot.domain.request import RequestDraft
from bot.domain.words import counted
from tests.factories import NOW


def test_a_count_of_one_takes_the_singular_and_every_other_the_plural() -> None:
    assert [counted(n, "partition") for n in (0, 1, 2)] == [
        "0 partitions",
        "1 partition",
        "2 partitions",
    ]
    assert counted(1, "copy") == "1 copy" and counted(3, "copy") == "3 copies"
    assert counted(1, "GPU") == "1 GPU" and counted(8, "GPU") == "8 GPUs"


def test_the_planner_says_one_partition_when_a_gpu_holds_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 40 GB copies: one A100 40GB holds one partition that large.
    assert main(["deploy", "plan", "p4d.24xlarge", "--model", "llama=40gbx20"]) == 1
    out = capsys.readouterr().out
    assert "holds at most 1 partition that large" in out
    assert "1 partitions" not in out


def _helps(parser: argparse.ArgumentParser) -> list[str]:
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                texts += _helps(sub)
    return texts


def test_help_texts_print_as_written() -> None:
    helps = _helps(build_parser())
    assert len(helps) > 10  # every command and subcommand
    assert not [h for h in helps if "%%" in h]
    quote = next(h for h in helps if h.startswith("usage: gpu-bot quote"))
    assert "util=50%" in quote


def _visible(blocks: object) -> str:
    """The text people see in Block Kit (not the block and action ids)."""
    if isinstance(blocks, dict):
        return " ".join(
            v if k == "text" and isinstance(v, str) else _visible(v) for k, v in blocks.items()
        )
    if isinstance(blocks, list):
        return " ".join(_visible(v) for v in blocks)
    return ""


def test_utilisation_is_spelt_one_way_wherever_people_read_it() -> None:
    form = reserve_form(RequestDraft(), ["p5.48xlarge"], "us-east-1", {})
    said = [_visible(help_blocks(NOW)), _visible(form)]
    for bad in ("util=abc", "util=150%"):
        with pytest.raises(RequestSyntaxError) as refused:
            parse_request(f"2x p5.48xlarge 3d from tomorrow {bad}", now=NOW)
        said.append(str(refused.value))
    said += _helps(build_parser())
    assert "utilisation" in said[0]
    assert [s for s in said if "utilization" in s.lower()] == []


def test_output_cut_short_by_its_reader_ends_quietly() -> None:
    # A pipe of one page: the catalog (about 38 KB) cannot fit in it before the reader
    # hangs up, whatever the timing, so the writer always meets the closed pipe.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "catalog", "--json"],
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    assert proc.stderr is not None
    with os.fdopen(read_end, "rb") as out:
        out.readline()  # as `| head -1` would
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err
