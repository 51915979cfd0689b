"""Posting a message that carries its delivery key, and finding it again by that key;
sharing a file into a thread, and finding it there by its name.

The key travels in Slack message metadata (`metadata.event_payload.key`), which
conversations.history returns with `include_all_metadata`. This client must not retry
posts on its own: a post retried after a 5xx or a timeout may be a second message. Every
uncertain outcome is raised as `Uncertain` and resolved by looking (services/delivery.py).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError

from bot.adapters.slack.client import CountedWebClient
from bot.domain.records import SlackMessage
from bot.services.ports import FileToShare, RateLimited, Refused, Uncertain

log = logging.getLogger(__name__)
METADATA_EVENT = "gpu_bot_delivery"
# Refusals about the message or where it goes: the same post would be refused again.
LASTING_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "is_inactive",
        "invalid_blocks",
        "invalid_blocks_format",
        "invalid_metadata_format",
        "invalid_metadata_schema",
        "metadata_too_large",
        "msg_too_long",
        "no_text",
        "too_many_attachments",
        "restricted_action",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "restricted_action_non_threadable_channel",
        "message_not_found",
        "cant_update_message",
        "edit_window_closed",
        "user_not_found",
        "user_not_visible",
        "user_disabled",
        "cannot_dm_bot",
        "messages_tab_disabled",
    }
)
MAX_PAGES = 10  # of 200 messages: a reminder is looked for among the recent ones only


def once_only_client(token: str | None, base_url: str, timeout: int = 10) -> WebClient:
    """A WebClient without retry handlers (see the module's docstring)."""
    client = CountedWebClient(token=token, base_url=base_url, timeout=timeout)
    client.retry_handlers = []
    return client


class SlackPoster:
    def __init__(self, client: WebClient) -> None:
        self.client = client

    def post(
        self,
        channel: str,
        text: str,
        blocks: list[dict[str, Any]],
        key: str,
        thread_ts: str | None = None,
    ) -> SlackMessage:
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"key": key}}
        response = self._call(
            self.client.chat_postMessage,
            channel=channel,
            text=text,
            blocks=blocks or None,  # a text-only message
            metadata=metadata,
            unfurl_links=False,
            thread_ts=thread_ts,
        )
        return SlackMessage(channel=str(response["channel"]), ts=str(response["ts"]))

    def update(self, message: SlackMessage, text: str, blocks: list[dict[str, Any]]) -> None:
        self._call(
            self.client.chat_update,
            channel=message.channel,
            ts=message.ts,
            text=text,
            blocks=blocks,
        )

    def find(
        self, channel: str, key: str, since: datetime, thread_ts: str | None = None
    ) -> SlackMessage | None:
        if channel.startswith(("U", "W")):  # a person: their DM with the bot
            opened = self._call(self.client.conversations_open, users=channel)
            channel = str(opened["channel"]["id"])
        cursor: str | None = None
        # A reply is not in the channel's history: it is in its thread's replies.
        method = (
            self.client.conversations_replies if thread_ts else self.client.conversations_history
        )
        extra = {"ts": thread_ts} if thread_ts else {}
        for _ in range(MAX_PAGES):
            page = self._call(
                method,
                channel=channel,
                oldest=f"{since.timestamp():.6f}",
                include_all_metadata=True,
                limit=200,
                cursor=cursor,
                **extra,
            )
            for message in page.get("messages", []):
                metadata = message.get("metadata") or {}
                payload = metadata.get("event_payload") or {}
                if metadata.get("event_type") == METADATA_EVENT and payload.get("key") == key:
                    return SlackMessage(channel=channel, ts=str(message["ts"]))
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return None

    def share(self, channel: str, thread_ts: str, file: FileToShare) -> None:
        """files_upload_v2: files.getUploadURLExternal, the bytes POSTed to the URL it
        gives, then files.completeUploadExternal into the thread. Only the last step
        shows anything; a failure before it leaves an unshared file, which nobody sees."""
        self._call(
            self.client.files_upload_v2,
            channel=channel,
            thread_ts=thread_ts,
            filename=file.filename,
            title=file.title,
            content=file.content,
        )

    def find_shared(self, channel: str, thread_ts: str, filename: str) -> SlackMessage | None:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = self._call(
                self.client.conversations_replies,
                channel=channel,
                ts=thread_ts,
                limit=200,
                cursor=cursor,
            )
            for message in page.get("messages", []):
                if any(f.get("name") == filename for f in message.get("files") or []):
                    return SlackMessage(channel=channel, ts=str(message["ts"]))
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return None

    def _call(self, method: Any, **kwargs: Any) -> Any:
        try:
            return method(**kwargs)
        except SlackApiError as error:
            status = error.response.status_code
            if status == 429:
                headers = error.response.headers or {}
                raise RateLimited(float(headers.get("retry-after") or 1)) from error
            if status >= 500:
                raise Uncertain(f"Slack answered {status}") from error
            code = str(error.response.get("error") or status)
            raise Refused(code, lasting=code in LASTING_ERRORS) from error
        except (SlackRequestError, OSError) as error:  # timeouts, resets, refused connections
            raise Uncertain(f"{type(error).__name__}: {error}") from error
