"""File uploads in the local Slack API, in Slack's three steps: files.getUploadURLExternal,
the POST of the bytes to the upload URL, files.completeUploadExternal into a conversation."""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from bot.adapters.slack.local_api.calls import UPLOAD_METHOD, Call, Fault, UploadedFile, decoded


class Files:
    """The files side of `LocalSlackApi` (which sets these up and serves the calls)."""

    files: dict[str, UploadedFile]
    messages: dict[str, list[dict[str, Any]]]
    threads: dict[tuple[str, str], list[dict[str, Any]]]
    calls: list[Call]
    keep_calls: bool
    _faults: dict[str, Fault]
    _lock: threading.Lock
    _file_ids: itertools.count[int]

    @property
    def base(self) -> str:
        raise NotImplementedError

    def _next_ts(self) -> str:
        raise NotImplementedError

    def shared_files(self) -> list[UploadedFile]:
        """Files shared into a conversation, in the order they were completed."""
        with self._lock:
            return [f for f in self.files.values() if f.channel is not None]

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
            wanted = list(decoded(args.get("files"), []))
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
