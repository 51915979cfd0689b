"""A gunicorn worker that serves with waitress.

Gunicorn forks, supervises and restarts the worker processes; waitress serves in each:
its one I/O thread reads every connection without blocking and hands a worker thread
only a complete request, so clients that send slowly cost a socket each, not a thread.
Its server and channels are guarded (bot.http_guard) so that slow sockets cannot crowd
out signed requests, and a refused body is answered before the connection closes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from gunicorn.workers.base import Worker
from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.server import BaseWSGIServer
from waitress.task import ThreadedTaskDispatcher

from bot.adapters.slack.inbound import MAX_BODY_BYTES
from bot.http_guard import CHANNEL_TIMEOUT, CONNECTION_LIMIT, GuardedServer


class WaitressWorker(Worker):  # type: ignore[misc]
    def run(self) -> None:
        socket_map: dict[int, Any] = {}
        sockets = [listener.sock for listener in self.sockets]
        adj = Adjustments(
            sockets=sockets,
            threads=self.cfg.threads,
            connection_limit=CONNECTION_LIMIT,
            channel_timeout=CHANNEL_TIMEOUT,
            cleanup_interval=1,  # the guard's deadlines are looked at every second
            max_request_body_size=MAX_BODY_BYTES,
            expose_tracebacks=False,
            ident="gpu-bot",
        )
        tasks = ThreadedTaskDispatcher()  # the worker threads every server hands requests to
        tasks.set_thread_count(adj.threads)
        for sock in sockets:
            # Each registers itself in the socket map, as waitress's create_server does.
            GuardedServer(
                self.wsgi,
                socket_map,
                _sock=sock,
                dispatcher=tasks,
                adj=adj,
                bind_socket=False,
                sockinfo=(sock.family, sock.type, sock.proto, sock.getsockname()),
            )
        while self.alive and self.ppid == os.getppid():
            self.notify()  # tells the arbiter this process is alive
            wasyncore.loop(timeout=0.5, map=socket_map, use_poll=True, count=1)
        # Stop accepting, let the requests under way finish and their answers go out.
        for dispatcher in list(socket_map.values()):
            if isinstance(dispatcher, BaseWSGIServer):
                dispatcher.close()
        deadline = time.monotonic() + self.cfg.graceful_timeout - 2
        while _busy(socket_map) and time.monotonic() < deadline:
            self.notify()
            wasyncore.loop(timeout=0.2, map=socket_map, use_poll=True, count=1)
        tasks.shutdown(cancel_pending=True, timeout=2)
        wasyncore.close_all(socket_map)


def _busy(socket_map: dict[int, Any]) -> bool:
    """A request is being answered, or an answer is still being sent."""
    return any(
        getattr(d, "requests", None) or getattr(d, "total_outbufs_len", 0)
        for d in socket_map.values()
    )
