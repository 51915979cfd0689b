"""Extensions end to end: the Extend button on the before-end reminder, approval by an
allowed approver who is not the requester, bought exactly once from the sandbox market,
refused when the price moved; the reminders follow the new end."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.records import Reservation
from bot.services.extensions import ExtensionJob
from tests.integration.reminder_steps import at, audit_actions, buy, move, texts
from tests.slack_harness import (
    APPROVAL_CHANNEL,
    APPROVER,
    APPROVER_2,
    OUTSIDER,
    REQUESTER,
    BotUnderTest,
)
from tests.slack_payloads import text_input

H = timedelta(hours=1)
MIN = timedelta(minutes=1)


def active(bot: BotUnderTest, kind: OptionKind = OptionKind.CAPACITY_BLOCK):  # type: ignore[no-untyped-def]
    res = buy(bot, kind)
    at(bot, res.start + MIN)
    move(bot, "R1", State.ACTIVE)
    bot.wait()
    at(bot, res.end - 24 * H)
    return res


def later(bot: BotUnderTest) -> None:
    """A minute on: posts to one person are paced (the reminder went out this second)."""
    at(bot, bot.clock.now() + MIN)


def extend_value(bot: BotUnderTest) -> str:
    """The Extend button's value on the latest reminder."""
    for call in reversed(bot.fake.of("chat.postMessage")):
        for block in call.blocks():
            accessory = block.get("accessory") or {}
            if accessory.get("action_id") == ActionId.EXTEND.value:
                return str(accessory["value"])
    raise AssertionError("no Extend button")


def days_added(bot: BotUnderTest, res: Reservation) -> float:
    """How much AWS (the sandbox) says the reservation grew: each purchase adds a day."""
    aws = bot.aws(res.region)
    if res.kind is OptionKind.TRAINING_PLAN:
        end = aws.sagemaker.describe_training_plan(TrainingPlanName=res.id)["EndTime"]
    else:
        found = aws.ec2.describe_capacity_reservations(CapacityReservationIds=[res.id])
        end = found["CapacityReservations"][0]["EndDate"]
    return float((end - res.end) / (24 * H))


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_an_approved_extension_is_bought_once_and_moves_the_reminders(make_bot, kind) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot, kind)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.PENDING_APPROVAL
    # The latest card with the extension's buttons (an idle alert may follow it).
    card = [
        c for c in bot.fake.of("chat.postMessage") if "gpu_extension_approve" in c.text_of_blocks()
    ][-1]
    assert card.args["channel"] == APPROVAL_CHANNEL
    # The requester cannot approve their own extension; an outsider cannot either.
    bot.approve("R1|1", REQUESTER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.approve("R1|1", OUTSIDER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert bot.record("R1").extension.status is ExtensionStatus.PENDING_APPROVAL  # type: ignore[union-attr]
    # Two approvers at once: one approval, one purchase.
    clicks = [
        threading.Thread(
            target=bot.approve,
            args=("R1|1", who),
            kwargs={"action_id": ActionId.EXTENSION_APPROVE.value},
        )
        for who in (APPROVER, APPROVER_2, APPROVER)
    ]
    for click in clicks:
        click.start()
    for click in clicks:
        click.join()
    bot.wait()
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.BOUGHT
    assert record.reservation is not None and record.reservation.end == res.end + 24 * H
    assert days_added(bot, res) == 1
    assert audit_actions(bot).count("extension-bought") == 1
    assert audit_actions(bot).count("extension-approved") == 1
    later(bot)
    assert "is extended to" in texts(bot)[-1]
    # The approvers' card shows the outcome, without buttons.
    update = bot.fake.of("chat.update")[-1]
    assert update.args["channel"] == APPROVAL_CHANNEL
    assert "bought" in update.text_of_blocks() and "gpu_extension_approve" not in (
        update.text_of_blocks()
    )
    # Running the purchase job again buys nothing more.
    bot.services.extensions.buy(ExtensionJob(request="R1", number=1))
    assert days_added(bot, res) == 1
    # The end reminders moved: nothing at the old end, the new ones at the new end.
    before = len(texts(bot))
    at(bot, res.end - 2 * H)
    assert len(texts(bot)) == before
    at(bot, res.end + 22 * H)
    assert "in 2 h" in texts(bot)[-1]


def test_a_rejected_extension_buys_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    reject_with(bot, APPROVER, "the run finished early")
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.REJECTED
    assert record.extension.reason == "the run finished early"
    assert record.reservation is not None and record.reservation.end == res.end
    assert days_added(bot, res) == 0
    later(bot)
    assert "was rejected" in texts(bot)[-1] and "the run finished early" in texts(bot)[-1]
    # Approving after the rejection changes nothing.
    bot.approve("R1|1", APPROVER_2, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert days_added(bot, res) == 0


def reject_with(bot: BotUnderTest, user: str, reason: str) -> None:
    """Reject extension 1 of R1 through its form: an empty reason is refused first."""
    opened = len(bot.fake.of("views.open"))
    bot.click(ActionId.EXTENSION_REJECT.value, "R1|1", user)
    bot.wait()
    view = bot.fake.of("views.open")[opened].view()
    assert view["callback_id"] == CallbackId.EXTENSION_REJECT.value
    assert "Reject extending *R1*" in json.dumps(view)
    empty = bot.submit_view(
        CallbackId.EXTENSION_REJECT.value,
        {FormBlock.REJECT_REASON.value: text_input(" \u0000 ")},
        user,
        view["private_metadata"],
    )
    assert json.loads(empty.body)["response_action"] == "errors"
    assert bot.record("R1").extension.status is ExtensionStatus.PENDING_APPROVAL  # type: ignore[union-attr]
    done = bot.submit_view(
        CallbackId.EXTENSION_REJECT.value,
        {FormBlock.REJECT_REASON.value: text_input(reason)},
        user,
        view["private_metadata"],
    )
    assert done.status == 200
    bot.wait()


def test_someone_who_is_not_an_approver_gets_no_reject_form(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    _reply, token = bot.click(ActionId.EXTENSION_REJECT.value, "R1|1", OUTSIDER)
    _reply, own = bot.click(ActionId.EXTENSION_APPROVE.value, "R1|1", REQUESTER)
    bot.wait()
    assert bot.fake.of("views.open") == []  # refused before any form
    assert "Only approvers can approve or reject an extension" in str(bot.responses(token))
    assert "an extension of your own reservation" in str(bot.responses(own))
    assert bot.record("R1").extension.status is ExtensionStatus.PENDING_APPROVAL  # type: ignore[union-attr]


def test_a_price_that_moved_after_approval_is_refused(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.market.conditions.price_factor = 1.2  # the market moves before the job buys
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.FAILED
    assert "price moved" in record.extension.reason
    assert record.reservation is not None and record.reservation.end == res.end
    assert days_added(bot, res) == 0
    later(bot)
    assert "was not extended" in texts(bot)[-1]
    # Asking again shows the new price; a new approval buys it.
    bot.click(ActionId.EXTEND.value, "R1|24", REQUESTER)
    bot.wait()
    bot.approve("R1|2", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]
    assert days_added(bot, res) == 1


def test_an_ended_reservation_cannot_be_extended(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    res = active(bot)
    value = extend_value(bot)
    at(bot, res.end - 30 * MIN)
    bot.click(ActionId.EXTEND.value, value, REQUESTER)
    bot.wait()
    assert bot.record("R1").extension is None
    assert any("less than an hour" in str(r) for r in bot.fake.of("response_url"))
