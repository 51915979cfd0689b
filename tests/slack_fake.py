"""A local fake of Slack's Web API (and response_url endpoints) that records every call
and can be told to answer 429 or 500. Point `SLACK_API_URL` / `WebClient(base_url=)` at
`fake.api_url`; response URLs are `fake.response_url(token)`."""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class Call:
    method: str  # Web API method, or "response_url"
    args: dict[str, Any]
    status: int
    token: str | None = None  # the response_url token

    def blocks(self) -> list[dict[str, Any]]:
        raw = self.args.get("blocks") or []
        return json.loads(raw) if isinstance(raw, str) else list(raw)

    def view(self) -> dict[str, Any]:
        raw = self.args.get("view") or {}
        return json.loads(raw) if isinstance(raw, str) else dict(raw)

    def text_of_blocks(self) -> str:
        return json.dumps(self.blocks())


@dataclass
class _Fault:
    status: int
    times: int
    retry_after: int | None = None


@dataclass
class FakeSlack:
    groups: dict[str, list[str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._faults: dict[str, _Fault] = {}
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, token: str) -> str:
        return f"{self.base}/response/{token}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- control ----------------------------------------------------------------------

    def fail(
        self, method: str, status: int, times: int = 1, retry_after: int | None = None
    ) -> None:
        """The next `times` calls of `method` answer `status` (429 with Retry-After)."""
        with self._lock:
            self._faults[method] = _Fault(status, times, retry_after)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def of(self, method: str, ok_only: bool = True) -> list[Call]:
        with self._lock:
            return [
                c for c in self.calls if c.method == method and (not ok_only or c.status == 200)
            ]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[Call]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.of(method)
            if len(found) >= count:
                return found
            time.sleep(0.01)
        raise AssertionError(f"expected {count} {method} call(s), got {len(self.of(method))}")

    # --- serving ----------------------------------------------------------------------

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length).decode()
        path = urlparse(request.path).path
        if request.headers.get("Content-Type", "").startswith("application/json"):
            args = json.loads(raw or "{}")
        else:
            args = {k: v[0] for k, v in parse_qs(raw).items()}
        if path.startswith("/response/"):
            method, token = "response_url", path.rsplit("/", 1)[1]
        else:
            method, token = path.removeprefix("/api/"), None
        with self._lock:
            fault = self._faults.get(method)
            if fault and fault.times > 0:
                fault.times -= 1
                status, body = (
                    fault.status,
                    {
                        "ok": False,
                        "error": "ratelimited" if fault.status == 429 else "internal_error",
                    },
                )
                headers = (
                    {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                )
            else:
                status, body, headers = 200, self._answer(method, args), {}
            self.calls.append(Call(method, args, status, token))
        payload = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(payload)))
        for key, value in headers.items():
            request.send_header(key, value)
        request.end_headers()
        request.wfile.write(payload)

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://example.slack.com/",
                "team": "Example",
                "user": "gpu-bot",
                "team_id": "T0EXAMPLE",
                "user_id": "UGPUBOT",
                "bot_id": "BGPUBOT",
            }
        if method in ("chat.postMessage", "chat.update"):
            channel = str(args.get("channel", ""))
            if channel.startswith(("U", "W")):
                channel = "D" + channel[1:]  # a DM with that user
            ts = args.get("ts") or f"{1_700_000_000 + next(self._ts)}.000100"
            return {"ok": True, "channel": channel, "ts": ts}
        if method.startswith("views."):
            return {"ok": True, "view": {"id": "V0FAKE", **(self._view(args))}}
        if method == "usergroups.users.list":
            return {"ok": True, "users": self.groups.get(str(args.get("usergroup")), [])}
        return {"ok": True}

    @staticmethod
    def _view(args: dict[str, Any]) -> dict[str, Any]:
        raw = args.get("view") or {}
        return json.loads(raw) if isinstance(raw, str) else dict(raw)
