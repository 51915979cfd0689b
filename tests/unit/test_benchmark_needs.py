"""Each benchmark runs with one documented install, or says up front what it needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_job_benchmark_without_rq_says_what_to_install_before_running() -> None:
    # rq made unimportable, as on an install without the bench extra.
    code = (
        "import sys; sys.modules['rq'] = None\n"
        "from benchmarks.job_throughput import main\n"
        "raise SystemExit(main(['--jobs', '10']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "pip install -e '.[bench]'" in done.stderr and "--no-rq" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing was started: no Redis, no fake Web API
