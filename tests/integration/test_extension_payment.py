"""An extension AWS takes with its payment still processing (`payment-pending`; a training
plan's `PaymentStatus: Pending`) is not paid yet: the old end and its reminders stand, the
fee is held, not paid, and no second extension is asked meanwhile (AWS refuses one). The
bot follows it until AWS says paid (then the end moves and the fee is paid) or failed
(the old end stays, nothing is paid, and the requester and the approvers are told).
EC2 User Guide, "Extend Capacity Blocks", Billing. A block of 2x p5.48xlarge for 3 days
costs $4,983.55; one more day, $1,661.18."""

from __future__ import annotations

from datetime import timedelta

import pytest

from aws_sandbox.conditions import AnswerFault
from bot.blocks.ids import ActionId
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.domain.extension_steps import PAYMENT_FAILED
from bot.domain.records import CapacityRecord, Reservation
from tests.integration.reminder_steps import at, audit_actions, texts
from tests.integration.test_extensions import active, days_added, extend_value, later
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, REQUESTER, BotUnderTest

H = timedelta(hours=1)
FEE = 1661.18


def approved_while_aws_is_slow_to_be_paid(bot: BotUnderTest, kind: OptionKind) -> Reservation:
    res = active(bot, kind)
    bot.market.conditions.extension_payment_delay = 3 * H
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    return res


def money(record: CapacityRecord) -> tuple[float, float]:
    m = record.money
    return round(m.held_usd, 2), round(m.paid_usd, 2)


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_a_pending_payment_holds_the_fee_keeps_the_end_and_counts_once_paid(
    make_bot,  # type: ignore[no-untyped-def]
    kind: OptionKind,
) -> None:
    bot = make_bot()
    res = approved_while_aws_is_slow_to_be_paid(bot, kind)
    record = bot.record("R1")
    paid_before = money(record)[1]
    assert record.extension is not None
    assert record.extension.status is ExtensionStatus.PAYMENT_PENDING
    assert record.reservation is not None and record.reservation.end == res.end
    assert days_added(bot, res) == 0  # AWS does not show the new end before it is paid
    fee = record.extension.offer.fee_usd
    assert kind is not OptionKind.CAPACITY_BLOCK or fee == FEE
    assert money(record) == (fee, paid_before)  # held until AWS says paid
    later(bot)
    assert "is processing its payment" in texts(bot)[-1]
    # AWS refuses another extension while one is payment-pending: so does the bot.
    _reply, token = bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    assert "already payment pending" in str(bot.responses(token))
    # AWS says paid: the end moves, the fee is paid, the requester hears it.
    at(bot, bot.clock.now() + 3 * H + 10 * timedelta(minutes=1))
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.BOUGHT
    assert record.reservation is not None and record.reservation.end == res.end + 24 * H
    assert money(record) == (0.0, round(paid_before + fee, 2))
    assert days_added(bot, res) == 1
    assert audit_actions(bot).count("extension-bought") == 1
    assert any("is extended to" in t for t in texts(bot))


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_a_failed_payment_keeps_the_old_end_pays_nothing_and_tells_people(
    make_bot,  # type: ignore[no-untyped-def]
    kind: OptionKind,
) -> None:
    bot = make_bot()
    res = active(bot, kind)
    paid_before = money(bot.record("R1"))[1]
    bot.market.conditions.extension_payment_delay = 3 * H
    bot.market.conditions.payments_fail = True
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert bot.record("R1").extension.status is ExtensionStatus.PAYMENT_PENDING  # type: ignore[union-attr]
    at(bot, bot.clock.now() + 3 * H + 10 * timedelta(minutes=1))
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.FAILED
    assert record.extension.reason == PAYMENT_FAILED
    assert record.reservation is not None and record.reservation.end == res.end
    assert money(record) == (0.0, paid_before)  # nothing held, nothing more paid
    assert days_added(bot, res) == 0
    assert "extension-payment-failed" in audit_actions(bot)
    # The requester and the approvers (in the card's thread) are told.
    later(bot)
    told = [t for t in texts(bot) if "could not take the payment" in t]
    assert told, texts(bot)
    threads = [
        c
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == APPROVAL_CHANNEL
        and c.args.get("thread_ts")
        and "could not take the payment" in str(c.args.get("text"))
    ]
    assert len(threads) == 1
    # The old end's reminders still come: the last one before the old end.
    before = len(texts(bot))
    at(bot, res.end - 30 * timedelta(minutes=1))
    assert len(texts(bot)) > before
    # A new extension may be asked once the failed one is over.
    bot.market.conditions.payments_fail = False
    bot.market.conditions.extension_payment_delay = timedelta(0)
    at(bot, res.end - 2 * H)
    _reply, token = bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    assert "already" not in str(bot.responses(token))
    assert bot.record("R1").extension.number == 2  # type: ignore[union-attr]


def test_an_unknown_outcome_found_payment_pending_is_followed_not_bought_again(
    make_bot,  # type: ignore[no-untyped-def]
) -> None:
    """The purchase answer is lost after AWS took the order: the history shows it
    payment-pending, so the bot follows the payment and never buys it again."""
    bot = make_bot()
    res = active(bot)
    bot.market.conditions.extension_payment_delay = 3 * H
    bot.market.conditions.lose_answers("PurchaseCapacityBlockExtension", AnswerFault.READ_TIMEOUT)
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    at(bot, bot.clock.now() + 10 * timedelta(minutes=1))
    assert bot.record("R1").extension.status is ExtensionStatus.PAYMENT_PENDING  # type: ignore[union-attr]
    at(bot, bot.clock.now() + 3 * H + 10 * timedelta(minutes=1))
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]
    assert days_added(bot, res) == 1
    assert len(bot.market.store.records("capacity-block-extension")) == 1
