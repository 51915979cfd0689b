"""A fast stand-in for Slack's Web API for throughput benchmarks: answers every
`chat.postMessage` with ok and records when each arrived and its text.

Built to measure its clients, not itself: asyncio, TCP_NODELAY on every connection, and
each response written in one send (a response split over two sends waits on the client's
delayed ACK, about 40 ms, and the benchmark would measure those stalls).

Control: GET /__count -> {"count": n}; GET /__dump -> [[arrival unix time, text], ...];
POST /__reset forgets what was recorded.

Run: python -m benchmarks.fake_web_api --port 3200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from typing import Any

_OK_HEAD = "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"


class Recorder:
    def __init__(self) -> None:
        self.posts: list[tuple[float, bytes]] = []
        self.ts = 0

    def handle(self, path: bytes, body: bytes) -> bytes:
        if path.endswith(b"/chat.postMessage"):
            self.posts.append((time.time(), body))
            self.ts += 1
            return b'{"ok":true,"channel":"C0BENCH","ts":"%d.000100"}' % self.ts
        if path == b"/__count":
            return json.dumps({"count": len(self.posts)}).encode()
        if path == b"/__dump":
            return json.dumps([[t, _text_of(b)] for t, b in self.posts]).encode()
        if path == b"/__reset":
            self.posts.clear()
            return b'{"ok":true}'
        return b'{"ok":false,"error":"unknown_method"}'


def _text_of(body: bytes) -> str:
    """The text of a post: JSON (slack_sdk's chat.postMessage) or form-encoded."""
    if body.startswith(b"{"):
        return str(json.loads(body).get("text", ""))
    from urllib.parse import parse_qs

    return parse_qs(body.decode()).get("text", [""])[0]


class _Connection(asyncio.Protocol):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            length = 0
            marker = head.find(b"content-length:")
            if marker >= 0:
                line_end = head.find(b"\r\n", marker)
                length = int(head[marker + 15 : line_end if line_end >= 0 else len(head)])
            if len(self.buffer) < end + 4 + length:
                return
            path = self.buffer[:end].split(b" ", 2)[1].split(b"?", 1)[0]
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            answer = self.recorder.handle(path, body)
            close = b"connection: close" in head
            headers = f"Content-Length: {len(answer)}\r\n"
            headers += "Connection: close\r\n\r\n" if close else "\r\n"
            self.transport.write(_OK_HEAD.encode() + headers.encode() + answer)  # one send
            if close:
                self.transport.close()
                self.transport = None


async def serve(port: int, ready: Any = None) -> None:
    recorder = Recorder()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(recorder), "127.0.0.1", port, backlog=4096, reuse_address=True
    )
    if ready is not None:
        ready()
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=3200)
    args = parser.parse_args()
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
