"""What was bought, as people see it: the reservation on the card, the buttons for a
purchase of unknown outcome, and how to use the capacity once it is active. Pure."""

from __future__ import annotations

from typing import Any

from bot.blocks.elements import actions, button, confirmed
from bot.blocks.ids import ActionId
from bot.blocks.text import esc, usd, when
from bot.blocks.values import ButtonValue, ExtensionRef, RequestRef
from bot.domain.comparison import OptionKind
from bot.domain.records import CapacityRecord, Reservation
from bot.domain.usage import usage_hint

Block = dict[str, Any]


def reservation_line(reservation: Reservation) -> str:
    where = reservation.availability_zone or reservation.region
    fee = f" · {usd(reservation.fee_usd)} upfront" if reservation.fee_usd is not None else ""
    reason = f" ({esc(reservation.state_reason)})" if reservation.state_reason else ""
    return (
        f"*{reservation.kind.label}* `{esc(reservation.id)}` in {esc(reservation.account)} "
        f"· {reservation.instances}x {esc(reservation.instance_type)} in {esc(where)} "
        f"· {when(reservation.start)} → {when(reservation.end)}{fee} "
        f"· AWS: {esc(reservation.state)}{reason}"
    )


def unknown_buttons(record: CapacityRecord) -> Block:
    """A purchase whose outcome is unknown: a person decides, the bot never re-buys."""
    ref = RequestRef(record.id)
    return _decide_unknown(
        f"purchase-unknown:{record.id}", ActionId.PURCHASE_CHECK, ActionId.PURCHASE_MARK_FAILED, ref
    )


def unknown_extension_buttons(request_id: str, number: int) -> Block:
    """An extension whose purchase outcome is unknown: the same two decisions."""
    ref = ExtensionRef(request_id, number)
    return _decide_unknown(
        f"extension-unknown:{ref}", ActionId.EXTENSION_CHECK, ActionId.EXTENSION_MARK_FAILED, ref
    )


def _decide_unknown(block_id: str, check: ActionId, fail: ActionId, ref: ButtonValue) -> Block:
    return actions(
        block_id,
        button("Check again", check, ref),
        confirmed(
            button("Mark failed", fail, ref, "danger"),
            "Mark failed?",
            "Only if you checked the account and nothing was bought. "
            "The bot will not buy it again either way.",
            yes="Mark failed",
        ),
    )


def usage(reservation: Reservation, request_id: str) -> str:
    """How to use active capacity: ids, zone and the exact command or setting."""
    if reservation.kind is OptionKind.TRAINING_PLAN:
        return (
            f"Training plan `{esc(reservation.id)}` ({reservation.instances}x "
            f"ml.{esc(reservation.instance_type)}, {esc(reservation.availability_zone or '')}) "
            "is active.\n"
            f"• Training job: `CreateTrainingJob` with `ResourceConfig.TrainingPlanArn="
            f"{esc(reservation.id)}` and `InstanceType=ml.{esc(reservation.instance_type)}`\n"
            f"• HyperPod: the instance group's `TrainingPlanArn={esc(reservation.id)}`\n"
            "• Endpoint: the production variant's `CapacityReservationConfig="
            '{"CapacityReservationPreference": "capacity-reservations-only", '
            f'"MlReservationArn": "{esc(reservation.id)}"}}` (or `/gpu deploy`)'
        )
    hint = usage_hint(
        reservation.kind.value,
        reservation.id,
        reservation.region,
        reservation.availability_zone,
        reservation.instance_type,
        reservation.instances,
        request_id,
    )
    return (
        f"{reservation.kind.label} `{esc(reservation.id)}` is active in "
        f"{esc(reservation.availability_zone or reservation.region)} until "
        f"{when(reservation.end)}. {esc(hint.title)}\n```{esc(hint.command)}```"
    )
