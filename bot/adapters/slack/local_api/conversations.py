"""Conversations in the local Slack API: messages posted by channel, their history and
threads, delivery keys, and messages a person deleted."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

from bot.adapters.slack.local_api.calls import decoded, dm_channel


class Conversations:
    """The messages side of `LocalSlackApi` (which sets these up and serves the calls)."""

    messages: dict[str, list[dict[str, Any]]]
    threads: dict[tuple[str, str], list[dict[str, Any]]]
    deleted: set[tuple[str, str]]
    _keys: Counter[str]
    _lock: threading.Lock
    _ts: itertools.count[int]

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

    def _post(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """chat.postMessage adds a message to its channel's history (with `thread_ts`, to
        that thread's replies); chat.update of a
        message someone deleted answers message_not_found."""
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
            metadata = decoded(args.get("metadata"), None)
            if metadata:
                message["metadata"] = metadata
                key = (metadata.get("event_payload") or {}).get("key")
                if key:
                    self._keys[str(key)] += 1
            thread_ts = args.get("thread_ts") or None
            if thread_ts:  # a reply: in its thread, not in the channel's history
                message["thread_ts"] = thread_ts
                self.threads.setdefault((channel, str(thread_ts)), []).append(message)
            else:
                self.messages.setdefault(channel, []).append(message)
        return {"ok": True, "channel": channel, "ts": ts}

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

    def _next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"
