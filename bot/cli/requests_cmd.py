"""`gpu-bot requests list|show` and `gpu-bot reservations`: what the bot's Redis holds,
and what AWS holds that the bot bought, for operators."""

from __future__ import annotations

import argparse
from typing import Any

from bot.blocks.money import money_text
from bot.cli.output import console, fail, print_json, settings_or_exit
from bot.domain.ledger import billing
from bot.domain.lifecycle import State
from bot.domain.records import CapacityRecord, Reservation

EXIT_USAGE = 2


def register(sub: Any) -> None:
    requests = sub.add_parser("requests", help="list or show the bot's requests (from Redis)")
    verbs = requests.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="requests, newest last")
    listing.add_argument("--state", help="only this lifecycle state: " + ", ".join(State))
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(run=run_list)
    show = verbs.add_parser("show", help="one request with its reservation and audit trail")
    show.add_argument("id", help="request id, e.g. R12")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(run=run_show)

    held = sub.add_parser(
        "reservations", help="what AWS holds that the bot bought (by tag and plan name)"
    )
    held.add_argument("--account", help="only this account name (see GPU_BOT_ACCOUNTS)")
    held.add_argument("--json", action="store_true", help="machine-readable output")
    held.set_defaults(run=run_reservations)


def _store() -> Any:
    from bot.adapters.store import open_store

    settings = settings_or_exit()
    return settings, open_store(settings.redis_url, settings.namespace)


def reservation_json(reservation: Reservation | None) -> dict[str, Any] | None:
    if reservation is None:
        return None
    return {
        "kind": reservation.kind.value,
        "id": reservation.id,
        "account": reservation.account,
        "region": reservation.region,
        "availability_zone": reservation.availability_zone,
        "state": reservation.state,
        "start": reservation.start.isoformat(),
        "end": reservation.end.isoformat(),
        "instances": reservation.instances,
        "fee_usd": reservation.fee_usd,
    }


def record_json(record: CapacityRecord, audit: list[Any] | None = None) -> dict[str, Any]:
    money = record.money
    data: dict[str, Any] = {
        "id": record.id,
        "state": record.state.value,
        "requester": record.requester,
        "team": record.team_name,
        "request": record.text,
        "account": record.request.account,
        "choice": (
            {
                "kind": record.choice.kind.value,
                "offering_id": record.choice.offering_id,
                "total_usd": record.choice.total_usd,
            }
            if record.choice
            else None
        ),
        "approvers": record.approvers,
        # Where it stands now (an extension moves the end) and what it costs in all.
        "window": {"start": record.window[0].isoformat(), "end": record.window[1].isoformat()},
        # The ledger's figures (bot/domain/money.py): the same everywhere money is shown.
        "held_usd": money.held_usd,
        "paid_usd": money.paid_usd,
        "paid_is_estimate": money.estimate,
        "released_usd": money.released_usd,
        "aws_billing": billing(record),
        "ledger": [e.model_dump(mode="json") for e in record.ledger],
        "extended_usd": record.extended_usd,
        "budget": record.budget.model_dump(mode="json") if record.budget else None,
        "failure": record.failure,
        "reservation": reservation_json(record.reservation),
        "attempts": [a.model_dump(mode="json") for a in record.attempts],
    }
    if audit is not None:
        data["audit"] = [
            {
                "at": e.at.isoformat(),
                "actor": e.actor,
                "action": e.action,
                "from": e.from_state,
                "to": e.to_state,
                "usd": e.usd,
                "detail": e.detail,
            }
            for e in audit
        ]
    return data


def _all(store: Any) -> list[CapacityRecord]:
    records: list[CapacityRecord] = []
    for state in State:
        records += store.in_state(state)
    return sorted(records, key=lambda r: (r.created_at, r.id))


def run_list(args: argparse.Namespace) -> int:
    if args.state is not None and args.state not in {s.value for s in State}:
        return fail(
            f"unknown state {args.state!r}; one of: {', '.join(s.value for s in State)}",
            EXIT_USAGE,
        )
    _settings, store = _store()
    records = store.in_state(State(args.state)) if args.state else _all(store)
    if args.json:
        print_json([record_json(r) for r in records])
        return 0
    out = console()
    if not records:
        out.print("No requests.")
    for r in records:
        kind = r.choice.kind.value if r.choice else "-"
        held = f" {r.reservation.id}" if r.reservation else ""
        out.print(f"{r.id}  {r.state.value:<16} {kind:<22} {r.text}{held}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    _settings, store = _store()
    request_id = args.id.strip().upper()
    request_id = request_id if request_id.startswith("R") else f"R{request_id}"
    record = store.get(request_id)
    if record is None:
        return fail(f"there is no request {args.id!r}", EXIT_USAGE)
    data = record_json(record, store.audit(record.id, limit=1000))
    if args.json:
        print_json(data)
        return 0
    out = console()
    for key in ("id", "state", "requester", "request", "account", "window"):
        out.print(f"{key}: {data[key]}")
    out.print(f"money: {money_text(record)}", markup=False)
    out.print(f"failure: {data['failure']}")
    out.print(f"choice: {data['choice']}")
    out.print(f"reservation: {data['reservation']}")
    for entry in data["audit"]:
        usd = f" ${entry['usd']:,.2f}" if entry["usd"] is not None else ""
        out.print(
            f"  {entry['at']} {entry['action']} by {entry['actor']} "
            f"({entry['from']} -> {entry['to']}){usd} {entry['detail']}"
        )
    return 0


def run_reservations(args: argparse.Namespace) -> int:
    from bot.adapters.aws.purchasing import AwsPurchaser
    from bot.adapters.clock import SystemClock
    from bot.app import make_accounts
    from bot.domain.catalog import default_catalog

    settings, store = _store()
    clock = SystemClock()
    if settings.sandbox:
        from aws_sandbox.redis_store import StoredClock

        clock = StoredClock(store.redis, store.prefix.strip("{}"))  # type: ignore[assignment]
    accounts = make_accounts(settings, clock, store)
    names = accounts.names()
    if args.account is not None and args.account not in names:
        return fail(f"unknown account {args.account!r}; one of: {', '.join(names)}", EXIT_USAGE)
    purchaser = AwsPurchaser(accounts, default_catalog(), clock)
    records = _all(store)
    by_id = {r.id: r for r in records}
    regions = sorted({settings.aws_region, *(r.request.region for r in records)})
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for account in [args.account] if args.account else names:
        for request_id, reservation in purchaser.bought(account, regions, settings.namespace):
            seen.add(reservation.id)
            flags: list[str] = []
            record = by_id.get(request_id or "")
            if record is None:
                flags.append("no request")
            elif record.reservation is None or record.reservation.id != reservation.id:
                flags.append("not recorded on its request")
            if record is not None and record.reservation is not None and not flags:
                # AWS's descriptions carry no fee: the one paid is on the request.
                reservation = reservation.model_copy(update={"fee_usd": record.reservation.fee_usd})
            row = reservation_json(reservation) or {}
            rows.append({"request": request_id, **row, "flags": flags})
    for record in records:
        held = record.reservation
        wanted = args.account is None or (held is not None and held.account == args.account)
        if held is not None and held.id not in seen and wanted and not record.state.final:
            row = reservation_json(held) or {}
            rows.append({"request": record.id, **row, "flags": ["missing in AWS"]})
    if args.json:
        print_json(rows)
        return 0
    out = console()
    if not rows:
        out.print("Nothing bought by this bot is held in AWS.")
    for row in rows:
        shown = f"  [{', '.join(row['flags'])}]" if row["flags"] else ""
        fee = f"${row['fee_usd']:,.2f}" if row["fee_usd"] is not None else "-"
        out.print(
            f"{row['request'] or '-':<6} {row['kind']:<22} {row['id']} {row['account']} "
            f"{row['state']} {row['start']} -> {row['end']} {row['instances']}x {fee}{shown}"
        )
    return 0
