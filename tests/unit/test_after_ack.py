"""Work after the ack: `wait_idle` (the harness's, and serve's drain on the way out) hears
the end of work that was held for its response, however the two threads interleave."""

from __future__ import annotations

import threading
from typing import Any

from bot.after_ack import AfterAck


class FinishesBeforeItIsCounted(AfterAck):
    """Each task is done before `release` counts it down: the order in which a fast task
    left `wait_idle` waiting for its whole timeout."""

    def _start(self, task: Any) -> None:
        super()._start(task)
        self._pool.submit(lambda: None).result()  # the one pool thread ran the task first


def test_wait_idle_wakes_when_held_work_done_before_its_release_is_counted() -> None:
    pool = FinishesBeforeItIsCounted(max_workers=1)
    ran = threading.Event()
    tasks = pool.hold()
    pool.run(ran.set)
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(pool.wait_idle(30)), daemon=True)
    waiter.start()
    while not pool._idle._waiters:  # type: ignore[attr-defined]  # the waiter is waiting
        threading.Event().wait(0.001)
    pool.release(tasks)
    waiter.join(5)  # without the wake-up it waits its 30 s
    assert ran.is_set() and woke == [True]
    pool.shutdown()
