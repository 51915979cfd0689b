"""What the ledger keeps beside the records in Redis, and its readers (the `MoneyIndex`
port). transition.lua writes it in the same step as each record; the layout:

- `money:{month}`: a hash of `{team}:held`, `:paid`, `:asked`, `:asked_n`, `:measured`
  (cents): a team's month in one HMGET, every team's in one HGETALL;
- `rows:{month}:{team}`: the team's requests in the month's spend report, scored by the
  start of their window; `row:{month}`: each one's spend row (compact JSON);
- `waiting`: what waits for approvers, scored by request number; `waiting:who`: its kind
  and who may not act on it;
- `closed:{team}` / `closed:{team}:use`: the team's last closed reservations (by start)
  and what each measured, for the learned default `util`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from bot.adapters.store.base import RedisBase, epoch
from bot.domain.budgets import TeamMonth
from bot.domain.learning import LEARN_FROM
from bot.domain.ledger import Closed, SpendRow, project
from bot.domain.records import CapacityRecord

UNIT = "\x1f"  # between a projection's fields: no team name or month holds it
_FIELDS = ("held", "paid", "asked", "asked_n", "measured")


def encode_row(row: SpendRow) -> str:
    doc: dict[str, Any] = {
        "r": row.request_id,
        "t": row.team,
        "u": row.requester,
        "o": row.option,
        "s": row.state,
        "w": epoch(row.start),
        "h": row.held,
        "p": row.paid,
        "m": row.measured,
    }
    if row.estimate:
        doc["e"] = 1
    if row.billing:
        doc["b"] = row.billing
    if row.used_pct is not None:
        doc["x"] = row.used_pct
    return json.dumps(doc, separators=(",", ":"))


def decode_row(text: str) -> SpendRow:
    doc = json.loads(text)
    return SpendRow(
        request_id=doc["r"],
        team=doc["t"],
        requester=doc["u"],
        option=doc["o"],
        state=doc["s"],
        start=datetime.fromtimestamp(doc["w"], UTC),
        held=int(doc["h"]),
        paid=int(doc["p"]),
        estimate=bool(doc.get("e")),
        billing=doc.get("b", ""),
        measured=int(doc["m"]),
        used_pct=doc.get("x"),
    )


def projection_args(record: CapacityRecord, order: float) -> list[Any]:
    """transition.lua's ARGV 8 to 15 for `record`."""
    p = project(record, order)
    amounts = (p.held, p.paid, p.asked, p.measured)
    head = UNIT.join([p.team, p.month, *(str(a) for a in amounts)])
    row = encode_row(p.row) if p.row is not None else ""
    waiting = p.waiting
    closed = p.closed
    return [
        head,
        row,
        epoch(p.row.start) if p.row is not None else 0,
        waiting.order if waiting is not None else "",
        " ".join((waiting.kind, *waiting.excluded)) if waiting is not None else "",
        epoch(closed.start) if closed is not None else "",
        f"{epoch(closed.start)} {closed.used_hours} {closed.billed_hours}" if closed else "",
        LEARN_FROM,
    ]


def _team_month(fields: dict[str, int]) -> TeamMonth:
    return TeamMonth(**{f: fields.get(f, 0) for f in _FIELDS})


class MoneyInRedis(RedisBase):
    def team_month(self, team: str, month: str) -> TeamMonth:
        names = [f"{team}:{f}" for f in _FIELDS]
        values = cast(list[str | None], self.redis.hmget(self.key("money", month), names))
        return _team_month({f: int(v or 0) for f, v in zip(_FIELDS, values, strict=True)})

    def month_totals(self, month: str) -> dict[str, TeamMonth]:
        raw = cast(dict[str, str], self.redis.hgetall(self.key("money", month)))
        teams: dict[str, dict[str, int]] = {}
        for name, value in raw.items():
            team, _, field = name.rpartition(":")
            if field in _FIELDS:
                teams.setdefault(team, {})[field] = int(value)
        totals = {team: _team_month(fields) for team, fields in teams.items()}
        # A team whose every request left the month keeps zeroed fields: not listed. One
        # whose requests cost $0 (On-Demand that ran nothing) still has their rows: listed.
        zeroed = [t for t, m in totals.items() if not any(vars(m).values())]
        pipe = self.redis.pipeline(transaction=False)
        for team in zeroed:
            pipe.zcard(self.key("rows", month, team))
        gone = {t for t, n in zip(zeroed, pipe.execute(), strict=True) if not n}
        return {t: m for t, m in sorted(totals.items()) if t not in gone}

    def month_rows(
        self, month: str, teams: Sequence[str], limit: int | None = None
    ) -> tuple[dict[str, int], list[SpendRow]]:
        """Each team's row count, and the first `limit` rows (all: None) in team order:
        the counts first, so only the rows shown are read."""
        pipe = self.redis.pipeline(transaction=False)
        for team in teams:
            pipe.zcard(self.key("rows", month, team))
        counts = {team: int(n) for team, n in zip(teams, pipe.execute(), strict=True)}
        left = sum(counts.values()) if limit is None else limit
        for team in teams:
            take = min(counts[team], left)
            if take:
                pipe.zrange(self.key("rows", month, team), 0, take - 1)
            left -= take
        ids = [i for page in pipe.execute() for i in cast(list[str], page)]
        if not ids:
            return counts, []
        docs = cast(list[str | None], self.redis.hmget(self.key("row", month), ids))
        return counts, [decode_row(doc) for doc in docs if doc]

    def waiting_for(
        self, user: str, offset: int = 0, limit: int | None = None
    ) -> tuple[list[str], int]:
        keys = [self.key("waiting"), *self._waiting_keys()]
        args = [user, offset, "" if limit is None else limit]
        total, page = cast(tuple[int, list[str]], self._lua("waiting_page.lua", keys, args))
        return list(page), int(total)

    def count_waiting_exclusions(self) -> int:
        """Build the per-user exclusion counts of the waiting list once (lists written
        before they were kept); returns how many entries were counted (0: done before)."""
        who, excluded, marker = self._waiting_keys()
        if self.redis.exists(marker):
            return 0
        return int(self._lua("waiting_recount.lua", [who, excluded, marker], []))

    def _waiting_keys(self) -> tuple[str, str, str]:
        return (
            self.key("waiting", "who"),
            self.key("waiting", "excluded"),
            self.key("waiting", "counted"),
        )

    def closed_of(self, team: str) -> list[Closed]:
        key = self.key("closed", team)
        ids = cast(list[str], self.redis.zrevrange(key, 0, LEARN_FROM - 1))
        if not ids:
            return []
        uses = cast(list[str | None], self.redis.hmget(key + ":use", ids))
        closed = []
        for use in uses:
            if use:
                start, used, billed = use.split()
                closed.append(
                    Closed(datetime.fromtimestamp(float(start), UTC), float(used), float(billed))
                )
        return closed
