"""The local Slack API's HTTP server: it reads each call, answers faults and refusals it
was told to give, records the call, and answers the method as Slack does."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from bot.adapters.slack.local_api.calls import (
    RESPONSE_URL_METHOD,
    Call,
    Fault,
    UploadedFile,
    dm_channel,
    view_of,
)
from bot.adapters.slack.local_api.checks import problems as slack_problems
from bot.adapters.slack.local_api.checks import refusal
from bot.adapters.slack.local_api.conversations import Conversations
from bot.adapters.slack.local_api.files import Files

SHUTDOWN_POLL_S = 0.02


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many workers post at once.
    request_queue_size = 128


@dataclass
class LocalSlackApi(Conversations, Files):
    groups: dict[str, list[str]] = field(default_factory=dict)  # user group id -> members
    calls: list[Call] = field(default_factory=list)
    refused_tokens: set[str] = field(default_factory=set)  # answered invalid_auth
    deleted: set[tuple[str, str]] = field(default_factory=set)  # (channel, ts) someone deleted

    def __post_init__(self) -> None:
        self._faults: dict[str, Fault] = {}
        self._slow: dict[str, list[float]] = {}  # method -> [seconds, times left]
        # Posted messages by channel, oldest first: conversations.history reads them.
        self.messages: dict[str, list[dict[str, Any]]] = {}
        # Seconds between taking a call's effect and answering it: a worker killed in
        # that gap has posted without knowing it.
        self.latency_s = 0.0
        self.keep_calls = True  # False: only messages are kept (long benchmark runs)
        # Where apps.connections.open sends a Socket Mode client (a local WebSocket server).
        self.socket_url: str | None = None
        # Calls refused because Slack would refuse their blocks or view (see block_rules).
        self.invalid: list[Call] = []
        self._keys: Counter[str] = Counter()  # delivery keys posted, kept as they arrive
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        self._view_ids = itertools.count(1)
        self._file_ids = itertools.count(1)
        self.files: dict[str, UploadedFile] = {}  # by file id, as issued
        # Replies by (channel, parent ts): as in Slack, not in the channel's history.
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                api._handle(self)

            def do_GET(self) -> None:  # conversations.history is a GET
                api._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = _Server(("127.0.0.1", 0), Handler)
        # A short poll so that closing it (every test, every shell exit) does not wait for
        # socketserver's default half second.
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_S},
            name="local-slack-api",
            daemon=True,
        )
        self.thread.start()

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, token: str) -> str:
        return f"{self.base}/response/{token}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- control and reading ----------------------------------------------------------

    def fail(
        self,
        method: str,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
        after_effect: bool = False,
    ) -> None:
        """The next `times` calls of `method` answer `status` (429 with Retry-After);
        with `after_effect` the call takes effect first (a post that happened, answered
        500: the uncertain outcome)."""
        with self._lock:
            self._faults[method] = Fault(status, times, retry_after, after_effect)

    def refuse(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls of `method` are refused as Slack refuses them: HTTP 200,
        `{"ok": false, "error": error}` (is_archived, not_in_channel, ...), nothing done."""
        with self._lock:
            self._faults[method] = Fault(200, times, error=error)

    def slow(self, method: str, seconds: float, times: int = 1) -> None:
        """The next `times` calls of `method` take effect at once and are answered after
        `seconds` (longer than the client waits: a post that happened, unknown to it)."""
        with self._lock:
            self._slow[method] = [seconds, times]

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def since(self, index: int) -> list[Call]:
        """Every call recorded after the first `index` ones, in arrival order."""
        with self._lock:
            return self.calls[index:]

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
        data = request.rfile.read(length)
        url = urlparse(request.path)
        path = url.path
        args: dict[str, Any] = {k: v[0] for k, v in parse_qs(url.query).items()}
        if path.startswith("/upload/"):
            self._upload(request, path.rsplit("/", 1)[1], data)
            return
        raw = data.decode()
        if request.headers.get("Content-Type", "").startswith("application/json"):
            args |= json.loads(raw or "{}")
        else:
            args |= {k: v[0] for k, v in parse_qs(raw).items()}
        token: str | None = None
        if path.startswith("/response/"):
            method, token = RESPONSE_URL_METHOD, path.rsplit("/", 1)[1]
        else:
            method = path.removeprefix("/api/")
        headers: dict[str, str] = {}
        body: dict[str, Any]
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        with self._lock:
            fault = self._faults.get(method)
            if bearer and bearer in self.refused_tokens:
                # What Slack answers a revoked or mistyped token: 200, not ok.
                status, body = 200, {"ok": False, "error": "invalid_auth"}
            elif fault and fault.times > 0:
                fault.times -= 1
                if fault.after_effect:
                    self._answer(method, args)
                status = fault.status
                error = fault.error or ("ratelimited" if status == 429 else "internal_error")
                body = {"ok": False, "error": error}
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
            elif problems := slack_problems(method, args):
                # Refused as Slack refuses it, nothing done; kept for the tests to fail on.
                status, body = refusal(method, problems)
                self.invalid.append(Call(method, args, status, token, body))
            else:
                status, body = 200, self._answer(method, args)
            if self.keep_calls:
                self.calls.append(Call(method, args, status, token, body))
            delay = self.latency_s
            slow = self._slow.get(method)
            if slow and slow[1] > 0:
                slow[1] -= 1
                delay = slow[0]
        if delay:
            time.sleep(delay)
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
            return self._post(method, args)
        if method == "apps.connections.open":
            if self.socket_url is None:
                return {"ok": False, "error": "not_allowed_token_type"}
            return {"ok": True, "url": self.socket_url}
        if method == "conversations.open":
            users = str(args.get("users", ""))
            return {"ok": True, "channel": {"id": dm_channel(users.split(",")[0])}}
        if method == "conversations.history":
            return self._history(args)
        if method == "conversations.replies":
            return self._replies(args)
        if method == "files.getUploadURLExternal":
            return self._get_upload_url(args)
        if method == "files.completeUploadExternal":
            return self._complete_upload(args)
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method.startswith("views."):
            view_id = args.get("view_id") or f"V{next(self._view_ids):08d}"
            return {"ok": True, "view": {**view_of(args), "id": view_id}}
        if method == "usergroups.users.list":
            return {"ok": True, "users": self.groups.get(str(args.get("usergroup")), [])}
        return {"ok": True}
