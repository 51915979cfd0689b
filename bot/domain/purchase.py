"""Buying rules: what a reservation's AWS state means for the request, the names and
tokens that make a purchase findable after a crash, the re-check before buying, and the
organisation's Capacity Block instance limit. Pure: no AWS, Slack or Redis.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from bot.domain.comparison import OptionKind
from bot.domain.lifecycle import State
from bot.domain.market import Offering
from bot.domain.records import Reservation

# Tag keys put on everything the bot buys; reconcile and `gpu-bot reservations` find by them.
TAG_REQUEST = "gpu-bot:request-id"
TAG_REQUESTER = "gpu-bot:requester"
TAG_APPROVERS = "gpu-bot:approvers"
TAG_NAMESPACE = "gpu-bot:namespace"

# EC2 Capacity Blocks: at most 64 instances in one block, 256 across an organisation.
MAX_BLOCK_INSTANCES = 64
MAX_ORG_BLOCK_INSTANCES = 256

# Capacity Block and ODCR states (EC2, lower case) and training plan statuses
# (SageMaker, capitalised), as the request's lifecycle sees them. Anything unknown
# leaves the request where it is and is shown as AWS said it.
_EC2_STATES = {
    "payment-pending": State.PAYMENT_PENDING,
    "pending": State.PAYMENT_PENDING,  # an ODCR being set up
    "assessing": State.PAYMENT_PENDING,
    "scheduled": State.SCHEDULED,
    "delayed": State.SCHEDULED,
    "active": State.ACTIVE,
    "expired": State.EXPIRED,
    "payment-failed": State.FAILED,
    "failed": State.FAILED,
    "cancelled": State.FAILED,
    "unavailable": State.FAILED,
    "unsupported": State.FAILED,  # a future-dated reservation AWS declined
}
_PLAN_STATES = {
    "Pending": State.PAYMENT_PENDING,
    "Scheduled": State.SCHEDULED,
    "Active": State.ACTIVE,
    "Expired": State.EXPIRED,
    "Failed": State.FAILED,
}
# Blocks that count towards the organisation's limit (AWS's words).
COUNTED_BLOCK_STATES = frozenset({"payment-pending", "scheduled", "active"})


def lifecycle_state(kind: OptionKind, aws_state: str) -> State | None:
    """The request state an AWS-reported reservation state means, or None if unknown."""
    if kind is OptionKind.TRAINING_PLAN:
        return _PLAN_STATES.get(aws_state)
    return _EC2_STATES.get(aws_state)


# --- names and tokens -------------------------------------------------------------------
# Nothing here is ever cut to fit: a name or token cut short can lose the attempt number
# (the same token for different parameters) or end in "-" (which SageMaker's name pattern
# refuses). A long namespace is shortened with a digest instead, so names stay distinct.

_PLAN_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9]+")
_PLAIN_NAMESPACE = re.compile(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*")
PLAN_NAME_MAX = 64  # CreateTrainingPlan: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}
CLIENT_TOKEN_MAX = 64  # CreateCapacityReservation: up to 64 ASCII characters
# Between the approvers in a tag value: every AWS tag allows spaces (SageMaker's tag value
# pattern, [\p{L}\p{Z}\p{N}_.:/=+\-@]*, has no comma).
TAG_LIST_SEPARATOR = " "


def _short(namespace: str, keep: int) -> str:
    """The namespace as itself when it is plain and short, else its first characters and
    a digest of all of it (different namespaces never share a short form by accident)."""
    if _PLAIN_NAMESPACE.fullmatch(namespace) and len(namespace) <= keep:
        return namespace
    cleaned = _PLAN_NAME_UNSAFE.sub("-", namespace).strip("-")[: keep - 9].strip("-")
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:8]
    return f"{cleaned}-{digest}" if cleaned else digest


def plan_name_prefix(namespace: str) -> str:
    """Every plan the bot of this namespace creates starts with this (at most 38
    characters, ending in "-")."""
    return f"gpu-bot-{_short(namespace, 29)}-"


def plan_name(namespace: str, request_id: str, attempt: int) -> str:
    """Training plan names are unique per account: the name is the idempotency key.

    Matches `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}`; one per attempt, so a new approval after
    a failure can try again, while a retry of the same attempt finds the same plan.
    """
    rid = _PLAN_NAME_UNSAFE.sub("", request_id).lower()
    name = f"{plan_name_prefix(namespace)}{rid}-a{attempt}"
    if len(name) > PLAN_NAME_MAX or not rid:
        raise ValueError(f"no valid training plan name for {request_id} attempt {attempt}")
    return name


def plan_names_of(namespace: str, request_id: str) -> str:
    """The start every plan name of this request has, whatever the attempt."""
    return f"{plan_name_prefix(namespace)}{_PLAN_NAME_UNSAFE.sub('', request_id).lower()}-a"


def client_token(namespace: str, request_id: str, attempt: int) -> str:
    """CreateCapacityReservation's ClientToken: ASCII, at most 64 characters, one per
    attempt of one request of one namespace."""
    token = f"gpu-bot:{_short(namespace, 24)}:{request_id}:{attempt}"
    if len(token) > CLIENT_TOKEN_MAX or not token.isascii():
        raise ValueError(f"no valid client token for {request_id} attempt {attempt}")
    return token


def zone_client_token(token: str, region: str, zone: str) -> str:
    """The attempt's ClientToken for one zone (the zone's letter appended): a reservation
    tried in a second zone after the first had no capacity is a new request, while a
    re-send to the same zone finds the same reservation."""
    suffix = zone.removeprefix(region) if zone.startswith(region) else zone
    zoned = f"{token}:{suffix}"
    if len(zoned) > CLIENT_TOKEN_MAX or not zoned.isascii():
        raise ValueError(f"no valid client token for {token} in {zone}")
    return zoned


def purchase_tags(
    namespace: str, request_id: str, requester: str, approvers: Iterable[str]
) -> dict[str, str]:
    return {
        TAG_REQUEST: request_id,
        TAG_REQUESTER: requester,
        TAG_APPROVERS: TAG_LIST_SEPARATOR.join(approvers),
        TAG_NAMESPACE: namespace,
    }


# --- the re-check just before buying ----------------------------------------------------

# A fee may differ by rounding (the card shows cents) but never rise above the approval.
FEE_TOLERANCE_USD = 0.01


def offering_moved(approved: Offering, approved_usd: float, current: Offering | None) -> str | None:
    """Why the offering as AWS shows it now may not be bought on the old approval,
    or None when it is the same offering, window and no higher fee."""
    if current is None:
        return "the offering is no longer offered"
    if current.start != approved.start or current.end != approved.end:
        return (
            f"the window moved from {approved.start:%Y-%m-%d %H:%M}-{approved.end:%Y-%m-%d %H:%M}"
            f" to {current.start:%Y-%m-%d %H:%M}-{current.end:%Y-%m-%d %H:%M} UTC"
        )
    if current.count != approved.count or current.instance_type != approved.instance_type:
        return (
            f"the offering is now {current.count}x {current.instance_type}, "
            f"not {approved.count}x {approved.instance_type}"
        )
    if current.upfront_usd > approved_usd + FEE_TOLERANCE_USD:
        return f"the fee rose from ${approved_usd:,.2f} to ${current.upfront_usd:,.2f}"
    return None


# --- the organisation's Capacity Block limit --------------------------------------------


@dataclass(frozen=True)
class BlockInUse:
    """A Capacity Block AWS reports in some account, bought by the bot or not."""

    account: str
    id: str
    instances: int
    state: str
    end: datetime

    @classmethod
    def of(cls, reservation: Reservation) -> BlockInUse:
        return cls(
            reservation.account,
            reservation.id,
            reservation.instances,
            reservation.state,
            reservation.end,
        )


def blocks_in_use(blocks: Iterable[BlockInUse]) -> list[BlockInUse]:
    """The blocks that count towards the limit (payment pending, scheduled, active)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for block in blocks:
        key = (block.account, block.id)
        if block.state in COUNTED_BLOCK_STATES and key not in seen:
            seen.add(key)
            out.append(block)
    return out


def block_limit_refusal(
    wanted: int, blocks: Iterable[BlockInUse], regions: Iterable[str] = ()
) -> str | None:
    """Why buying a block of `wanted` instances would break a Capacity Block limit, with
    how many are in use (in `regions`, which the text names) and when they free up; None
    when it fits."""
    if wanted > MAX_BLOCK_INSTANCES:
        return (
            f"a Capacity Block holds at most {MAX_BLOCK_INSTANCES} instances, "
            f"this one asks for {wanted}"
        )
    counted = blocks_in_use(blocks)
    used = sum(b.instances for b in counted)
    if used + wanted <= MAX_ORG_BLOCK_INSTANCES:
        return None
    where = ", ".join(regions)
    text = (
        f"{used} of {MAX_ORG_BLOCK_INSTANCES} Capacity Block instances are in use or booked "
        f"across the accounts{f' in {where}' if where else ''}; {wanted} more would pass "
        "the limit"
    )
    frees = _freed_by(counted, used + wanted - MAX_ORG_BLOCK_INSTANCES)
    if frees is not None:
        text += f" until {frees:%Y-%m-%d %H:%M} UTC, when enough blocks end"
    return text


def _freed_by(blocks: list[BlockInUse], needed: int) -> datetime | None:
    """When enough blocks have ended to free `needed` instances."""
    freed = 0
    for block in sorted(blocks, key=lambda b: b.end):
        freed += block.instances
        if freed >= needed:
            return block.end
    return None
