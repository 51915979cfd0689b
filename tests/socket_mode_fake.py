"""A local stand-in for Slack's Socket Mode endpoint: the fake Web API's
apps.connections.open points the bot's client here; this server says hello, sends the
envelopes a test gives it and records the client's acks. `drop()` closes the current
connection, as Slack does every few hours; the client is expected to open a new one."""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve


class FakeSocketMode:
    def __init__(self) -> None:
        self._outbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.acks: dict[str, dict[str, Any]] = {}
        self.connections = 0
        self._lock = threading.Lock()
        self._acked = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        # The bot's client does not answer a close frame: do not wait 10 s for it.
        self._server = serve(self._serve, "127.0.0.1", 0, close_timeout=0.2)
        threading.Thread(target=self._server.serve_forever, name="socket-mode", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"ws://{host}:{port}/link"

    def close(self) -> None:
        self._outbox.put(None)
        self._server.shutdown()

    def send(
        self,
        kind: str,
        payload: dict[str, Any],
        retry_attempt: int = 0,
        envelope_id: str | None = None,
    ) -> str:
        """Queue an envelope; returns its id (give it again to redeliver it)."""
        envelope_id = envelope_id or f"env-{next(self._ids)}"
        self._outbox.put(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "payload": payload,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": retry_attempt,
                "retry_reason": "timeout" if retry_attempt else "",
            }
        )
        return envelope_id

    def drop(self) -> None:
        """Close the connection in use (the next envelope goes over a new one)."""
        self._outbox.put({"drop": True})

    def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> dict[str, Any]:
        with self._acked:
            if not self._acked.wait_for(lambda: envelope_id in self.acks, timeout):
                raise AssertionError(f"no ack for {envelope_id} in {timeout} s")
            return self.acks[envelope_id]

    def wait_connections(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while self.connections < count:
            assert time.monotonic() < deadline, f"{self.connections} connection(s), not {count}"
            time.sleep(0.02)

    def _serve(self, ws: ServerConnection) -> None:
        with self._lock:
            self.connections += 1
        ws.send(
            json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "local"}})
        )
        reader = threading.Thread(target=self._read, args=(ws,), daemon=True)
        reader.start()
        while True:
            envelope = self._outbox.get()
            if envelope is None:
                ws.close()
                return
            if envelope.get("drop"):
                ws.close()
                return
            try:
                ws.send(json.dumps(envelope))
            except ConnectionClosed:
                self._outbox.put(envelope)  # for the next connection
                return

    def _read(self, ws: ServerConnection) -> None:
        try:
            for message in ws:
                data = json.loads(message)
                if "envelope_id" in data:
                    with self._acked:
                        self.acks[data["envelope_id"]] = data
                        self._acked.notify_all()
        except ConnectionClosed:
            return
