"""Sending a message from a job exactly once, as far as the person can see.

Jobs are delivered at least once (a worker can die after posting and before its ack), so
the post itself is made idempotent: the delivery key is recorded as pending before the
Slack call and travels in the message's metadata. On a second run a sent key is skipped;
a pending one means the outcome is not known, so the conversation is searched for the key
before posting again. Posting is paced per channel (Slack allows about one message a
second in a channel), and a 429 gives the job back for Slack's Retry-After: neither
loses the message nor sends it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot.domain.records import SlackMessage
from bot.services.jobs import RetryLater
from bot.services.ports import Clock
from bot.services.ports.delivery import (
    DeliveryLog,
    DeliveryRecord,
    DeliveryState,
    FileSharer,
    FileToShare,
    Poster,
    RateLimited,
    Refused,
    Uncertain,
)

log = logging.getLogger(__name__)
PACE_SECONDS = 1.0  # per channel: chat.postMessage's documented rate
# A pending delivery younger than this may still be in flight in another worker (its HTTP
# call times out after 10 s): wait before looking, or its message could be missed.
SETTLE = timedelta(seconds=30)
# Slack's clock and ours differ a little: look this much further back for the message.
LOOK_BACK = timedelta(minutes=5)


class OnceOnly:
    def __init__(
        self,
        deliveries: DeliveryLog,
        poster: Poster,
        clock: Clock,
        pace_seconds: float = PACE_SECONDS,
        settle: timedelta = SETTLE,
        files: FileSharer | None = None,
    ) -> None:
        self.deliveries = deliveries
        self.poster = poster
        self.files = files
        self.clock = clock
        self.pace_seconds = pace_seconds
        self.settle = settle

    def send(
        self,
        key: str,
        channel: str,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None = None,
    ) -> SlackMessage | None:
        """Post unless `key` was posted already (in the thread of `thread_ts` when
        given); returns the new message, or None when it had been sent before. Raises
        RetryLater (paced, 429, an uncertain outcome, too soon to look) or Refused."""
        return self._once(
            key,
            channel,
            lambda: self.poster.post(channel, text, blocks, key, thread_ts),
            lambda prior: self.poster.find(prior.channel, key, prior.at - LOOK_BACK, thread_ts),
        )

    def share_file(
        self, key: str, channel: str, thread_ts: str, file: Callable[[], FileToShare]
    ) -> bool:
        """Share the file `file()` makes into the thread of `thread_ts`, unless `key` was
        shared already (`file` is called only when it is about to be uploaded). True when
        shared now. Raises as `send` does."""
        files = self.files
        if files is None:
            raise RuntimeError("no file sharer: OnceOnly was built without one")

        def share() -> SlackMessage:
            made = file()
            files.share(channel, thread_ts, made)
            return SlackMessage(channel=channel, ts=thread_ts)

        def find(prior: DeliveryRecord) -> SlackMessage | None:
            return files.find_shared(prior.channel, thread_ts, filename_of(key))

        # Paced apart from the channel's messages: a chart follows its card at once
        # (files.completeUploadExternal has its own, higher rate limit; a 429 still
        # gives the job back).
        return self._once(key, channel, share, find, pace=f"files:{channel}") is not None

    def _once(
        self,
        key: str,
        channel: str,
        post: Callable[[], SlackMessage],
        find: Callable[[DeliveryRecord], SlackMessage | None],
        pace: str | None = None,
    ) -> SlackMessage | None:
        now = self.clock.now()
        interval = self.pace_seconds
        start = self.deliveries.begin_delivery(key, channel, now, interval, False, pace)
        if start.verdict == "sent":
            return None
        if start.verdict == "pending" and start.record is not None:
            prior = start.record
            if now - prior.at < self.settle:
                raise RetryLater(prior.at + self.settle, f"{key}: a post may still be under way")
            found = find(prior)
            if found is not None:
                log.info("%s was posted before an uncertain outcome; not posting again", key)
                self._record(key, DeliveryState.SENT, prior.channel, found.ts)
                return None
            start = self.deliveries.begin_delivery(key, channel, now, interval, True, pace)
        if start.verdict == "wait":
            wait = timedelta(seconds=start.wait_s)
            raise RetryLater(now + wait, f"pacing posts to {channel}")
        # The key is recorded as pending now, before the Slack call.
        try:
            message = post()
        except RateLimited as limited:
            self._record(key, DeliveryState.NOT_SENT, channel)
            retry_at = self.clock.now() + timedelta(seconds=max(limited.retry_after, 1.0))
            raise RetryLater(retry_at, f"Slack rate limit on {channel}") from limited
        except Refused:
            self._record(key, DeliveryState.NOT_SENT, channel)
            raise
        except Uncertain as unsure:
            # Left pending: the next run looks in the conversation before posting again.
            retry_at = self.clock.now() + self.settle
            reason = f"{key}: outcome unknown ({unsure})"
            raise RetryLater(retry_at, reason, failed=True) from unsure
        self._record(key, DeliveryState.SENT, channel, message.ts)
        return message

    def begun(self, key: str) -> bool:
        """Whether a post with `key` was made or may have been (not refused)."""
        record = self.deliveries.delivery(key)
        return record is not None and record.state is not DeliveryState.NOT_SENT

    def sent(self, key: str) -> SlackMessage | None:
        """The message posted with `key`, when it is known to have been sent."""
        record = self.deliveries.delivery(key)
        if record is None or record.state is not DeliveryState.SENT or record.ts is None:
            return None
        return SlackMessage(channel=record.channel, ts=record.ts)

    def update(self, message: SlackMessage, text: str, blocks: list[dict[str, Any]]) -> None:
        """Replace a message in place (idempotent: the same content twice is harmless)."""
        try:
            self.poster.update(message, text, blocks)
        except RateLimited as limited:
            retry_at = self.clock.now() + timedelta(seconds=max(limited.retry_after, 1.0))
            raise RetryLater(retry_at, f"Slack rate limit on {message.channel}") from limited
        except Uncertain as unsure:
            # Harmless to repeat: tried again after the worker's backoff.
            reason = f"updating {message.channel} {message.ts}: {unsure}"
            raise RetryLater(self.clock.now(), reason, failed=True) from unsure

    def _record(self, key: str, state: DeliveryState, channel: str, ts: str | None = None) -> None:
        record = DeliveryRecord(state=state, channel=channel, at=self.clock.now(), ts=ts)
        self.deliveries.record_delivery(key, record)


def filename_of(key: str) -> str:
    """The file name a file delivery with `key` is shared under (and found by)."""
    return "gpu-bot-" + key.replace(":", "-") + ".png"
