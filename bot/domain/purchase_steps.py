"""How buying moves a request: each step takes the record as it is and returns the new
record and the event it was (bot/domain/transitions.py's shape), or None when it no
longer applies because another worker or a person moved the record meanwhile.

The purchase job (bot/services/purchasing.py) calls AWS and then one of these; following
what was bought (bot/services/tracking.py) uses the last two. Which step comes next for a
purchase in flight is bot/domain/buy_once.py.
"""

from __future__ import annotations

from datetime import datetime

from bot.domain import events as on
from bot.domain.buy_once import lease
from bot.domain.comparison import OptionKind
from bot.domain.future_reservation import DECLINED, DECLINED_STATE
from bot.domain.lifecycle import TRANSITIONS, State
from bot.domain.purchase import client_token, lifecycle_state, plan_name
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord, PurchaseAttempt, Reservation
from bot.domain.transitions import Transition, moved

# Where a purchase may be recorded from: bought, or found after an unknown outcome.
_BUYING = (State.PURCHASING, State.PURCHASE_UNKNOWN)


def window_scheduled(record: CapacityRecord, now: datetime) -> Transition | None:
    """approved -> scheduled: On-Demand and Spot buy nothing ahead; they run in their
    window."""
    if record.state is not State.APPROVED:
        return None
    return moved(record, on.WindowScheduled(), state=State.SCHEDULED, updated_at=now)


def attempt_started(
    record: CapacityRecord,
    seen_state: State,
    seen_attempts: int,
    namespace: str,
    default_account: str,
    now: datetime,
    start_ahead: bool = False,
) -> Transition | None:
    """approved -> purchasing (or a new attempt after one that surely bought nothing:
    refused by AWS, or whose call was never sent), with the attempt recorded before any
    AWS call: its offering, account, the amount approved, its lease and its token. None
    unless the record is still as the job saw it (`seen_state`, `seen_attempts`): then
    another worker won; None too while the latest attempt may have bought (its call
    sent, or not known to be unsent): that one is reconciled, never tried again."""
    if record.state is not seen_state or len(record.attempts) != seen_attempts:
        return None
    latest = record.attempt
    settled = latest is None or bool(latest.refused) or latest.never_sent
    if record.state is State.PURCHASING and not settled:
        return None
    assert record.choice is not None
    number = len(record.attempts) + 1
    kind = record.choice.kind
    token = {
        OptionKind.TRAINING_PLAN: plan_name(namespace, record.id, number),
        OptionKind.ON_DEMAND_RESERVATION: client_token(namespace, record.id, number),
    }.get(kind, record.id)
    attempt = PurchaseAttempt(
        at=now,
        kind=kind,
        offering_id=record.choice.offering_id,
        account=record.request.account or default_account,
        region=record.request.region,
        approved_usd=record.choice.total_usd,
        lease_until=lease(now),
        token=token,
        start_ahead=start_ahead,
        marks_sending=True,
    )
    return moved(
        record,
        on.PurchaseStarted(),
        state=State.PURCHASING,
        attempts=(*record.attempts, attempt),
        updated_at=now,
    )


def bought(record: CapacityRecord, reservation: Reservation, now: datetime) -> Transition | None:
    """purchasing (or purchase_unknown, when it was found) -> the state AWS reports for
    what it holds; payment_pending while AWS has not settled it."""
    if record.state not in _BUYING:
        return None
    target = lifecycle_state(reservation.kind, reservation.state) or State.PAYMENT_PENDING
    state = target if target in TRANSITIONS[record.state] else State.PAYMENT_PENDING
    failure = reservation.state_reason or None if state is State.FAILED else None
    return moved(
        record,
        on.Bought(),
        state=state,
        reservation=reservation,
        failure=failure,
        updated_at=now,
    )


def attempt_sent(
    record: CapacityRecord, attempt: PurchaseAttempt, offering_id: str | None, now: datetime
) -> Transition | None:
    """`attempt`'s purchase call is about to go out: marked sent, with the offering id
    it buys (AWS may have renumbered the offering). From here the attempt may have
    bought: it is reconciled, never tried anew. None when a later attempt began or the
    request moved on: then the call must not be sent."""
    if record.state is not State.PURCHASING or record.attempt != attempt:
        return None
    sent = attempt.model_copy(update={"sent_at": now, "offering_id": offering_id})
    return moved(record, on.PurchaseSent(), attempts=(*record.attempts[:-1], sent))


def attempt_refused(
    record: CapacityRecord, attempt: PurchaseAttempt, problem: str
) -> Transition | None:
    """AWS refused `attempt` for sure (throttled, or it could not be asked): nothing was
    bought and a new attempt may be made later. None once a later attempt began."""
    if record.state is not State.PURCHASING or record.attempt != attempt:
        return None
    refused = attempt.model_copy(update={"refused": problem})
    return moved(record, on.PurchaseRetrying(), attempts=(*record.attempts[:-1], refused))


def requoted(
    record: CapacityRecord, quote: Quote | None, why: str, now: datetime
) -> Transition | None:
    """Nothing was bought and a new approval may succeed: back to quoted with a fresh
    quote, the approvals dropped, so that the requester submits anew."""
    if record.state not in (State.PURCHASING, State.APPROVED):
        return None
    return moved(
        record,
        on.Requoted(),
        state=State.QUOTED,
        quote=quote,
        approvals=(),
        approval_deadline=None,
        failure=f"Nothing was bought: {why}.",
        updated_at=now,
    )


def purchase_failed(record: CapacityRecord, why: str, now: datetime) -> Transition | None:
    """Nothing was bought, for a reason a new approval would not change."""
    if State.FAILED not in TRANSITIONS[record.state] or record.state.final:
        return None
    return moved(record, on.PurchaseFailed(), state=State.FAILED, failure=why, updated_at=now)


def outcome_unknown(
    record: CapacityRecord, attempt: PurchaseAttempt, now: datetime
) -> Transition | None:
    """purchasing -> purchase_unknown: the call got no certain answer and AWS shows
    nothing of it (yet). Never bought again; looked for again, then a person decides.
    The failure says so in words the approvers act on."""
    if record.state is not State.PURCHASING or record.attempt != attempt:
        return None
    said = (
        f"The purchase ({attempt.kind.label}, attempt {len(record.attempts)}) may or may not "
        f"have happened, and AWS shows nothing tagged {record.id} in {attempt.account} yet. "
        "The bot looks again for two hours and never buys it again; check the "
        "account, then press Check again or Mark failed."
    )
    return moved(
        record, on.PurchaseUnknown(), state=State.PURCHASE_UNKNOWN, failure=said, updated_at=now
    )


MARKED_FAILED = "Marked failed: nothing was bought."


def marked_failed(record: CapacityRecord, now: datetime) -> Transition | None:
    """purchase_unknown -> failed on an approver's word that nothing was bought (who may
    say so is the service's to check)."""
    if record.state is not State.PURCHASE_UNKNOWN:
        return None
    return moved(
        record, on.MarkedFailed(), state=State.FAILED, failure=MARKED_FAILED, updated_at=now
    )


# --- following what was bought ----------------------------------------------------------------


def tracked(
    record: CapacityRecord,
    seen_version: int,
    fresh: Reservation,
    target: State | None,
    now: datetime,
) -> Transition | None:
    """What AWS now says of the reservation, and the state it moves the request to (when
    that is a move the lifecycle allows). None when the record changed since it was read."""
    if record.version != seen_version:
        return None
    state = record.state
    if target is not None and target is not record.state and target in TRANSITIONS[record.state]:
        state = target
    update: dict[str, object] = {"reservation": fresh, "updated_at": now, "state": state}
    if state is State.FAILED and fresh.state == DECLINED_STATE:
        update["failure"] = DECLINED
    elif state is State.FAILED:
        update["failure"] = f"AWS reports {fresh.state}: {fresh.state_reason or 'no reason given'}"
    return moved(record, on.Tracked(moved_on=state is not record.state), **update)


def window_moved_on(
    record: CapacityRecord, seen_state: State, target: State, now: datetime
) -> Transition | None:
    """On-Demand and Spot: active once their window opens, expired once it closes."""
    if record.state is not seen_state or target not in TRANSITIONS[record.state]:
        return None
    return moved(record, on.WindowMovedOn(), state=target, updated_at=now)
