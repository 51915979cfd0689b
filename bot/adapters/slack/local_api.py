"""A local stand-in for Slack's Web API and response_url endpoints, on 127.0.0.1.

It answers what the bot calls (chat.*, views.*, auth.test, usergroups.users.list, and the
three steps of a file upload) the way Slack does, records every call in order, and can be
told to answer 429 or 500.

File uploads take Slack's current three steps: `files.getUploadURLExternal` gives a file
id and an upload URL (served here, as `upload`), the bytes are POSTed there, and
`files.completeUploadExternal` shares the file into `channel_id` (a thread with
`thread_ts`), where `conversations.replies` finds it. Completing a file id this server did
not issue, or one whose bytes did not arrive (or not as many as announced), is refused. The shell
renders what it records; the tests assert on it. Point `SLACK_API_URL` /
`WebClient(base_url=)` at `api_url`; response URLs are `response_url(token)`.
"""

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

from bot.adapters.slack.block_rules import message_problems, view_problems

RESPONSE_URL_METHOD = "response_url"
UPLOAD_METHOD = "upload"  # the POST of a file's bytes to its upload URL
# Calls carrying a message (text and blocks) or a view: checked as Slack checks them.
MESSAGE_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "chat.scheduleMessage",
        RESPONSE_URL_METHOD,
    }
)
VIEW_METHODS = frozenset({"views.open", "views.push", "views.update", "views.publish"})


def _decoded(raw: Any, empty: Any) -> Any:
    """Form-encoded calls carry blocks and views as JSON strings, JSON calls as objects."""
    if not raw:
        return empty
    return json.loads(raw) if isinstance(raw, str) else raw


def blocks_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of a call's arguments (a message or a response_url post)."""
    return list(_decoded(args.get("blocks"), []))


def view_of(args: dict[str, Any]) -> dict[str, Any]:
    return dict(_decoded(args.get("view"), {}))


@dataclass
class Call:
    method: str  # Web API method, or "response_url"
    args: dict[str, Any]
    status: int
    token: str | None = None  # the response_url token
    answer: dict[str, Any] = field(default_factory=dict)  # what the bot was told back

    def blocks(self) -> list[dict[str, Any]]:
        return blocks_of(self.args)

    def view(self) -> dict[str, Any]:
        return view_of(self.args)

    def text_of_blocks(self) -> str:
        return json.dumps(self.blocks())


@dataclass
class UploadedFile:
    id: str
    name: str
    length: int  # as announced to files.getUploadURLExternal
    data: bytes | None = None  # once POSTed to the upload URL
    title: str | None = None
    channel: str | None = None  # once shared by files.completeUploadExternal
    thread_ts: str | None = None


@dataclass
class _Fault:
    status: int
    times: int
    retry_after: int | None = None
    after_effect: bool = False  # the call takes effect, then the error is answered
    error: str | None = None  # Slack's error code (a refusal is answered 200, ok: false)


def dm_channel(channel: str) -> str:
    """A user id stands for the DM channel with that user."""
    return "D" + channel[1:] if channel.startswith(("U", "W")) else channel


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many workers post at once.
    request_queue_size = 128


@dataclass
class LocalSlackApi:
    groups: dict[str, list[str]] = field(default_factory=dict)  # user group id -> members
    calls: list[Call] = field(default_factory=list)
    refused_tokens: set[str] = field(default_factory=set)  # answered invalid_auth
    deleted: set[tuple[str, str]] = field(default_factory=set)  # (channel, ts) someone deleted

    def __post_init__(self) -> None:
        self._faults: dict[str, _Fault] = {}
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
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="local-slack-api", daemon=True
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
            self._faults[method] = _Fault(status, times, retry_after, after_effect)

    def refuse(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls of `method` are refused as Slack refuses them: HTTP 200,
        `{"ok": false, "error": error}` (is_archived, not_in_channel, ...), nothing done."""
        with self._lock:
            self._faults[method] = _Fault(200, times, error=error)

    def slow(self, method: str, seconds: float, times: int = 1) -> None:
        """The next `times` calls of `method` take effect at once and are answered after
        `seconds` (longer than the client waits: a post that happened, unknown to it)."""
        with self._lock:
            self._slow[method] = [seconds, times]

    def delete_message(self, channel: str, ts: str) -> None:
        """A person deletes a message: updates of it then answer message_not_found."""
        with self._lock:
            self.deleted.add((channel, ts))
            kept = [m for m in self.messages.get(channel, []) if m["ts"] != ts]
            self.messages[channel] = kept

    def reset_messages(self) -> None:
        with self._lock:
            self.messages.clear()
            self.threads.clear()
            self._keys.clear()

    def distinct_keys(self) -> int:
        """How many different delivery keys were posted (cheap: for polling)."""
        with self._lock:
            return len(self._keys)

    def received_times(self) -> list[float]:
        """When each message carrying a delivery key arrived (time.time())."""
        with self._lock:
            return [
                float(m["received"])
                for messages in self.messages.values()
                for m in messages
                if (m.get("metadata") or {}).get("event_payload", {}).get("key")
            ]

    def delivery_keys(self) -> list[str]:
        """The delivery key of every message posted (one per message, duplicates kept)."""
        with self._lock:
            return [
                str(m["metadata"]["event_payload"]["key"])
                for messages in self.messages.values()
                for m in messages
                if (m.get("metadata") or {}).get("event_payload", {}).get("key")
            ]

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    def shared_files(self) -> list[UploadedFile]:
        """Files shared into a conversation, in the order they were completed."""
        with self._lock:
            return [f for f in self.files.values() if f.channel is not None]

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
            elif problems := self._problems(method, args):
                # Refused as Slack refuses it, nothing done; kept for the tests to fail on.
                status, body = self._refusal(method, problems)
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

    def _upload(self, request: BaseHTTPRequestHandler, file_id: str, data: bytes) -> None:
        """A file's bytes POSTed to the URL files.getUploadURLExternal gave: Slack answers
        `OK - <length>` as plain text, or 404 for a URL it did not issue."""
        with self._lock:
            fault = self._faults.get(UPLOAD_METHOD)
            known = self.files.get(file_id)
            if fault and fault.times > 0:
                fault.times -= 1
                status, body = fault.status, "upload failed"
            elif known is None:
                status, body = 404, "not found"
            else:
                known.data = data
                status, body = 200, f"OK - {len(data)}"
            if self.keep_calls:
                args = {"file_id": file_id, "length": len(data)}
                self.calls.append(Call(UPLOAD_METHOD, args, status))
        payload = body.encode()
        request.send_response(status)
        request.send_header("Content-Type", "text/plain; charset=utf-8")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    def _get_upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        name = str(args.get("filename") or "")
        try:
            length = int(args.get("length") or 0)
        except ValueError:
            length = 0
        if not name or length <= 0:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._file_ids):08d}"
        self.files[file_id] = UploadedFile(id=file_id, name=name, length=length)
        return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            wanted = list(_decoded(args.get("files"), []))
        except json.JSONDecodeError:
            return {"ok": False, "error": "invalid_arguments"}
        channel = str(args.get("channel_id") or "")
        thread_ts = args.get("thread_ts") or None
        if not wanted:
            return {"ok": False, "error": "invalid_arguments"}
        if channel and not channel.startswith(("C", "D", "G")):
            return {"ok": False, "error": "channel_not_found"}
        if thread_ts and not any(m["ts"] == thread_ts for m in self.messages.get(channel, [])):
            return {"ok": False, "error": "invalid_thread_ts"}
        found: list[UploadedFile] = []
        for entry in wanted:
            known = self.files.get(str(entry.get("id")))
            if known is None or known.channel is not None:
                return {"ok": False, "error": "file_not_found"}
            if known.data is None or len(known.data) != known.length:
                return {"ok": False, "error": "file_upload_size_mismatch"}
            found.append(known)
        shared = []
        for entry, known in zip(wanted, found, strict=True):
            known.title = entry.get("title") or known.name
            if channel:
                known.channel, known.thread_ts = channel, thread_ts
            shared.append({"id": known.id, "title": known.title})
        if channel:
            message: dict[str, Any] = {
                "type": "message",
                "ts": self._next_ts(),
                "text": "",
                "files": [
                    {"id": f.id, "name": f.name, "title": f.title, "mimetype": "image/png"}
                    for f in found
                ],
                "received": time.time(),
            }
            if thread_ts:
                message["thread_ts"] = thread_ts
                self.threads.setdefault((channel, thread_ts), []).append(message)
            else:
                self.messages.setdefault(channel, []).append(message)
        return {"ok": True, "files": shared}

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """The thread of `ts` in `channel`, parent first, paged like history."""
        channel, ts = str(args.get("channel", "")), str(args.get("ts", ""))
        messages = self.messages.get(channel, [])
        parent = [m for m in messages if m["ts"] == ts]
        if not parent:
            return {"ok": False, "error": "thread_not_found"}
        thread = parent + self.threads.get((channel, ts), [])
        start = int(args.get("cursor") or 0)
        limit = int(args.get("limit") or 100)
        more = start + limit < len(thread)
        return {
            "ok": True,
            "messages": thread[start : start + limit],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _problems(self, method: str, args: dict[str, Any]) -> list[str]:
        """Why Slack would refuse this call's message or view ([] when it would not)."""
        try:
            if method in MESSAGE_METHODS:
                if str(args.get("delete_original", "")).lower() in ("1", "true"):
                    return []
                return message_problems(args.get("text"), _decoded(args.get("blocks"), []))
            if method in VIEW_METHODS:
                return view_problems(_decoded(args.get("view"), {}))
        except json.JSONDecodeError as exc:
            return [f"not JSON: {exc}"]
        return []

    @staticmethod
    def _refusal(method: str, problems: list[str]) -> tuple[int, dict[str, Any]]:
        if method in VIEW_METHODS:
            # views.* say invalid_arguments, with the reasons in response_metadata.
            messages = [f"[ERROR] {p}" for p in problems]
            return 200, {
                "ok": False,
                "error": "invalid_arguments",
                "response_metadata": {"messages": messages},
            }
        error = "no_text" if problems[0].startswith("no_text") else "invalid_blocks"
        # A response_url answers with an HTTP error; the Web API with ok: false.
        status = 400 if method == RESPONSE_URL_METHOD else 200
        return status, {"ok": False, "error": error, "errors": problems}

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
            channel = dm_channel(str(args.get("channel", "")))
            ts = args.get("ts") or self._next_ts()
            if method == "chat.update" and (channel, ts) in self.deleted:
                return {"ok": False, "error": "message_not_found"}
            if method == "chat.postMessage":
                message = {
                    "type": "message",
                    "ts": ts,
                    "text": args.get("text", ""),
                    "received": time.time(),
                }
                metadata = _decoded(args.get("metadata"), None)
                if metadata:
                    message["metadata"] = metadata
                    key = (metadata.get("event_payload") or {}).get("key")
                    if key:
                        self._keys[str(key)] += 1
                self.messages.setdefault(channel, []).append(message)
            return {"ok": True, "channel": channel, "ts": ts}
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

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        """Newest first, paged by `limit` and `cursor` (an offset here). Metadata only with
        include_all_metadata, as Slack does. `oldest` is not applied: these ts are counters,
        not times."""
        channel = str(args.get("channel", ""))
        if channel not in self.messages and not channel.startswith(("C", "D", "G")):
            return {"ok": False, "error": "channel_not_found"}
        newest_first = self.messages.get(channel, [])[::-1]
        start = int(args.get("cursor") or 0)
        limit = int(args.get("limit") or 100)
        with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        page = [
            m if with_metadata else {k: v for k, v in m.items() if k != "metadata"}
            for m in newest_first[start : start + limit]
        ]
        more = start + limit < len(newest_first)
        return {
            "ok": True,
            "messages": page,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"
