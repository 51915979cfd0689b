"""A worker process for fault tests and benchmarks: `python -m tests.worker_process`.

Settings come from the environment as in `gpu-bot worker`; the lease is short
(WORKER_LEASE_SECONDS) so a killed worker's jobs come back within the test's patience.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from datetime import timedelta

from bot.app import build_services
from bot.config import Settings
from bot.worker import Worker


def main() -> None:
    logging.basicConfig(
        level=os.environ.get("WORKER_LOG_LEVEL", "WARNING"),
        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
    )
    services = build_services(Settings())
    lease = timedelta(seconds=float(os.environ.get("WORKER_LEASE_SECONDS", "5")))
    concurrency = int(os.environ.get("WORKER_CONCURRENCY", "8"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    Worker(services, concurrency=concurrency, lease=lease, batch=concurrency * 4).run_forever(
        stop, interval=0.2
    )


if __name__ == "__main__":
    main()
