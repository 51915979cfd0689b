"""Slack messages sent once (see bot/services/delivery.py): a record per delivery key,
written before the post, and the per-channel pace, kept by begin_delivery.lua."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from bot.adapters.store.base import RedisBase
from bot.services.ports import DeliveryRecord, DeliveryStart, DeliveryState

# How long a delivery key is kept: longer than anything can still be sent about one
# request (a reservation runs at most 182 days; reminders and cleanup follow its end).
DELIVERY_KEPT = timedelta(days=200)


class DeliveriesInRedis(RedisBase):
    def delivered(self, key: str) -> bool:
        """Whether a message with this delivery key was sent (see `mark_delivered`)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(self.key("delivered", key))
        pipe.hexists(self.key("delivered"), key)  # marked before keys expired
        return any(pipe.execute())

    def mark_delivered(self, key: str, at: datetime, keep: timedelta = DELIVERY_KEPT) -> None:
        """Record a delivery for `keep` (then it is forgotten: the keys do not pile up)."""
        seconds = max(int(keep.total_seconds()), 1)
        self.redis.set(self.key("delivered", key), at.isoformat(), ex=seconds)

    def delivery(self, key: str) -> DeliveryRecord | None:
        raw = self.redis.get(self.key("delivery", key))
        return _delivery_record(str(raw)) if raw else None

    def record_delivery(self, key: str, record: DeliveryRecord) -> None:
        data = {
            "state": record.state.value,
            "channel": record.channel,
            "at": record.at.isoformat(),
            "ts": record.ts,
        }
        self.redis.set(
            self.key("delivery", key), json.dumps(data), ex=int(DELIVERY_KEPT.total_seconds())
        )

    def begin_delivery(
        self,
        key: str,
        channel: str,
        now: datetime,
        interval_s: float,
        looked: bool,
        pace: str | None = None,
    ) -> DeliveryStart:
        verdict, value = self._lua(
            "begin_delivery.lua",
            [self.key("delivery", key), self.key("pace", pace or channel)],
            args=[
                int(now.timestamp() * 1000),
                max(int(interval_s * 1000), 1),
                channel,
                now.isoformat(),
                int(DELIVERY_KEPT.total_seconds()),
                "",
                "1" if looked else "0",
            ],
        )
        if verdict == "wait":
            return DeliveryStart("wait", wait_s=int(value) / 1000)
        if verdict in ("sent", "pending"):
            return DeliveryStart(verdict, record=_delivery_record(value))
        return DeliveryStart("go")


def _delivery_record(raw: str) -> DeliveryRecord:
    data = json.loads(raw)
    return DeliveryRecord(
        state=DeliveryState(data["state"]),
        channel=data["channel"],
        at=datetime.fromisoformat(data["at"]),
        ts=data.get("ts"),
    )
