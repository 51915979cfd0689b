"""The /metrics page never fails as a whole: not on a half-made per-process file, not on
a store that does not answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bot.adapters.metrics.prometheus import render
from bot.services.ports import StoreCounts

# prometheus_client picks multiprocess mode when imported, so this runs in a new process.
_SCRAPE = """
import sys
from bot.adapters.metrics.prometheus import PrometheusMetrics, render
PrometheusMetrics().job_finished("quote", "ok")
sys.stdout.write(render()[0].decode())
"""


def test_a_metrics_file_being_created_is_left_out_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "counter_4242.db").write_bytes(b"")  # created, not yet sized
    (tmp_path / "counter_4343.db").write_bytes(b"\x40\x00\x00\x00" + b"\x00" * 12)  # damaged
    env = os.environ | {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRAPE], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert 'gpu_bot_jobs_total{kind="quote",outcome="ok"} 1.0' in done.stdout
    assert "gpu_bot_metrics_files_unreadable 2.0" in done.stdout


def test_a_store_that_does_not_answer_is_said_not_raised() -> None:
    def down() -> StoreCounts:
        raise ConnectionError("Redis is restarting")

    page = render(down)[0].decode()
    assert "gpu_bot_store_up 0.0" in page
    assert "gpu_bot_jobs_total" in page or "gpu_bot_approvals_total" in page


def test_the_store_counts_are_on_the_page() -> None:
    counts = StoreCounts(
        requests={"pending_approval": 3},
        jobs_due=2,
        jobs_scheduled=5,
        jobs_in_flight=1,
        jobs_dead=4,
        oldest_due_seconds=90.0,
    )
    page = render(lambda: counts)[0].decode()
    assert 'gpu_bot_requests{state="pending_approval"} 3.0' in page
    assert 'gpu_bot_requests{state="active"} 0.0' in page
    for line in (
        "gpu_bot_store_up 1.0",
        "gpu_bot_jobs_due 2.0",
        "gpu_bot_jobs_scheduled 5.0",
        "gpu_bot_jobs_in_flight 1.0",
        "gpu_bot_jobs_dead 4.0",
        "gpu_bot_job_lateness_seconds 90.0",
    ):
        assert line in page


def test_every_metric_the_readme_names_is_on_the_page() -> None:
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("### Metrics, logs and what to alert on", 1)[1].split("\n### ", 1)[0]
    named = set(re.findall(r"\bgpu_bot_[a-z_]+", section))
    page = render(lambda: StoreCounts())[0].decode()
    shown = set(re.findall(r"^# TYPE (gpu_bot_[a-z_]+) ", page, re.MULTILINE))
    shown |= {f"{n}_total" for n in shown} | {f"{n}_bucket" for n in shown}
    shown.add("gpu_bot_metrics_files_unreadable")  # only under gunicorn (the files' mode)
    assert len(named) >= 15
    assert named - shown == set()


def test_the_health_port_keeps_metrics_to_the_bearer_of_the_token() -> None:
    import urllib.error
    import urllib.request

    from bot.server import start_health_server

    server = start_health_server(
        0,
        lambda: True,
        host="127.0.0.1",
        metrics=lambda: (b"up 1\n", "text/plain"),
        metrics_token="t0ken",
    )
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def status(authorization: str | None) -> int:
        headers = {"Authorization": authorization} if authorization else {}
        try:
            with urllib.request.urlopen(
                urllib.request.Request(f"{base}/metrics", headers=headers), timeout=5
            ) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as refused:
            return refused.code

    try:
        assert status(None) == 401
        assert status("Bearer nope") == 401
        assert status("Bearer t0ken") == 200
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as reply:
            assert reply.status == 200  # health stays open for the orchestrator
    finally:
        server.shutdown()
