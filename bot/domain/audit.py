"""The audit trail's entries: who did what to a request, when, and for how much."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

BOT = "gpu-bot"  # the actor of the bot's own changes


@dataclass(frozen=True)
class AuditEntry:
    request_id: str
    actor: str  # Slack user id, or "gpu-bot" for the bot's own actions
    action: str  # created, quoted, submitted, approved, rejected, cancelled, ...
    from_state: str
    to_state: str
    at: datetime
    usd: float | None = None
    detail: str = ""

    def fields(self) -> list[str]:
        pairs = {
            "request": self.request_id,
            "actor": self.actor,
            "action": self.action,
            "from": self.from_state,
            "to": self.to_state,
            "at": self.at.isoformat(),
            "usd": "" if self.usd is None else f"{self.usd:.2f}",
            "detail": self.detail,
        }
        return [item for pair in pairs.items() for item in pair]

    @classmethod
    def from_fields(cls, data: dict[str, str]) -> AuditEntry:
        return cls(
            request_id=data["request"],
            actor=data["actor"],
            action=data["action"],
            from_state=data["from"],
            to_state=data["to"],
            at=datetime.fromisoformat(data["at"]),
            usd=float(data["usd"]) if data.get("usd") else None,
            detail=data.get("detail", ""),
        )
