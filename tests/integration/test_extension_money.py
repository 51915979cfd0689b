"""An extension is a purchase: the same spending policy (on its fee and on the request's
total after it), the same approval rule, a confirmation with the amount, and an offer AWS
sends without a price is no offer. A block of 2x p5.48xlarge for 3 days costs $4,983.55;
one more day, $1,661.18, takes it to $6,644.73."""

from __future__ import annotations

import pytest

from bot.blocks.ids import ActionId, CallbackId
from bot.domain.extension import ExtensionStatus
from tests.integration.test_extensions import active, days_added, extend_value, later
from tests.slack_harness import APPROVAL_CHANNEL, APPROVER, APPROVER_2, REQUESTER, BotUnderTest


def ask(bot: BotUnderTest) -> str:
    """The requester presses Extend on the reminder; what they were answered."""
    _reply, token = bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    return str(bot.responses(token))


def extension_status(bot: BotUnderTest) -> ExtensionStatus | None:
    ext = bot.record("R1").extension
    return ext.status if ext else None


@pytest.mark.parametrize(
    "limit",
    [1000, 5000],  # above the extension's own fee; above the request's total after it
)
def test_an_extension_above_the_second_approval_amount_needs_two_approvers(
    make_bot,  # type: ignore[no-untyped-def]
    limit: int,
) -> None:
    bot = make_bot(second_approval_usd=limit)
    res = active(bot)
    ask(bot)
    assert bot.record("R1").extension.required_approvals == 2  # type: ignore[union-attr]
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert extension_status(bot) is ExtensionStatus.PENDING_APPROVAL
    later(bot)
    card = [c for c in bot.fake.of("chat.update") if c.args["channel"] == APPROVAL_CHANNEL]
    assert "(1 of 2 approvals)" in card[-1].text_of_blocks()
    # The same approver again is refused before any form; another one completes it.
    _reply, again = bot.click(ActionId.EXTENSION_APPROVE.value, "R1|1", APPROVER)
    bot.wait()
    assert "approved this extension already" in str(bot.responses(again))
    bot.approve("R1|1", APPROVER_2, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert extension_status(bot) is ExtensionStatus.BOUGHT
    assert days_added(bot, res) == 1


def test_below_both_amounts_one_approver_buys_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(second_approval_usd=7000)
    active(bot)
    ask(bot)
    assert bot.record("R1").extension.required_approvals == 1  # type: ignore[union-attr]
    bot.approve("R1|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert extension_status(bot) is ExtensionStatus.BOUGHT


def test_no_extend_button_when_even_a_day_is_above_the_cap_it_says_why(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(max_request_usd=6000)
    active(bot)
    (reminder,) = [
        c.text_of_blocks()
        for c in bot.fake.of("chat.postMessage")
        if "ends at" in str(c.args.get("text"))
    ]
    assert ActionId.EXTEND.value not in reminder
    assert "R1 cannot be extended: one more day costs $1,661.18" in reminder
    assert "$6,644.73 in all, above the $6,000.00 limit" in reminder


def test_an_extension_that_takes_the_request_above_the_cap_is_refused(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(max_request_usd=6000)
    active(bot)
    # An Extend pressed on an earlier reminder, before the cap was lowered.
    _reply, token = bot.click(ActionId.EXTEND.value, "R1|24", REQUESTER)
    bot.wait()
    answer = str(bot.responses(token))
    assert "cannot be extended" in answer and "$6,644.73 in all" in answer
    assert "$6,000.00 limit" in answer
    assert bot.record("R1").extension is None  # nothing asked, nothing posted
    cards = [c for c in bot.fake.of("chat.postMessage") if c.args["channel"] == APPROVAL_CHANNEL]
    assert not any("asks to extend" in str(c.args.get("text")) for c in cards)


def test_the_extend_approval_confirms_the_amount_and_refuses_the_requester_first(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot)
    ask(bot)
    _reply, token = bot.click(ActionId.EXTENSION_APPROVE.value, "R1|1", REQUESTER)
    bot.wait()
    assert bot.fake.of("views.open") == []  # refused before being asked to confirm
    assert "your own reservation" in str(bot.responses(token))
    _reply, _ = bot.click(ActionId.EXTENSION_APPROVE.value, "R1|1", APPROVER, trigger_id="T-x")
    (form,) = bot.opened("T-x")
    assert form["callback_id"] == CallbackId.EXTENSION_APPROVE.value
    assert "Approve *$1,661.18* to extend *R1*" in form["blocks"][0]["text"]["text"]
    assert form["submit"]["text"] == "Approve $1,661.18"
    assert extension_status(bot) is ExtensionStatus.PENDING_APPROVAL  # nothing until confirmed


@pytest.mark.parametrize(
    ("quirk", "said"),
    [("no-fee", "AWS sent no UpfrontFee"), ("EUR", "priced in EUR")],
)
def test_an_extension_offer_without_a_usable_fee_is_not_offered(make_bot, quirk, said) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    active(bot)
    if quirk == "no-fee":
        bot.market.conditions.leave_out_fees("DescribeCapacityBlockExtensionOfferings")
    else:
        bot.market.conditions.fee_currency = quirk
    answer = ask(bot)
    assert "offers no extension of R1 to buy" in answer and said in answer
    assert bot.record("R1").extension is None
