"""Per-process metrics files, as the gunicorn master sees them."""

from __future__ import annotations

import contextlib
import glob
import os

ENV = "PROMETHEUS_MULTIPROC_DIR"


def process_exited(pid: int) -> None:
    """Forget an exited worker process's live gauges (its counters stay counted): what
    prometheus_client's mark_process_dead does, without importing it in the master."""
    path = os.environ.get(ENV)
    if not path:
        return
    for name in glob.glob(os.path.join(path, f"gauge_live*_{pid}.db")):
        with contextlib.suppress(FileNotFoundError):
            os.remove(name)
