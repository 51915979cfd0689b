"""The per-process metrics directory of `gpu-bot serve` outlives its workers: gunicorn's
workers are forks that inherit the master's exit handler."""

from __future__ import annotations

import os
from pathlib import Path

from bot.cli.serve_cmd import _remove_in_this_process_only


def test_a_worker_leaving_keeps_the_directory_its_master_removes(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "counter_1.db").write_bytes(b"")
    child = os.fork()
    if child == 0:  # a worker exits: the handler it inherited runs in it
        _remove_in_this_process_only(str(metrics), owner=os.getppid())
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (metrics / "counter_1.db").exists()
    _remove_in_this_process_only(str(metrics), owner=os.getpid())  # the master exits
    assert not metrics.exists()
