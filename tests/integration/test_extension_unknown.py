"""An extension whose purchase got no certain answer, still not shown by AWS after the
bot's two hours of looking: it waits for the approvers in their list and on its card,
with Check again (looks in AWS, never buys) and Mark failed (approvers only), and once
decided a new extension can be asked."""

from __future__ import annotations

from datetime import timedelta

import pytest

from aws_sandbox import AnswerFault
from bot.blocks.ids import ActionId
from bot.domain.comparison import OptionKind
from bot.domain.extension import ExtensionStatus
from bot.services.actor import Actor, NotAllowed
from tests.integration.reminder_steps import at
from tests.integration.test_buy_once import EXTENSION_OPERATIONS, market
from tests.integration.test_extensions import active
from tests.integration.test_slack_flow import action_ids
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest

H = timedelta(hours=1)


def unknown_for_good(bot: BotUnderTest, kind: OptionKind, shown_after: timedelta) -> None:
    """Extension 1 of R1 bought with its answer lost, past the bot's looking again."""
    active(bot, kind)
    bot.services.extensions.ask("R1", Actor(REQUESTER, False), 24)
    lost = EXTENSION_OPERATIONS[kind]
    market(bot).conditions.lose_answers(lost, AnswerFault.READ_TIMEOUT, shown_after=shown_after)
    bot.services.extensions.decide("R1", 1, Actor(APPROVER, True), True)
    bot.wait()
    for _ in range(6):  # the bot looks again for two hours, then leaves it to a person
        at(bot, bot.clock.now() + H / 2)
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.UNKNOWN
    assert market(bot).extension_calls() == 1


@pytest.mark.parametrize("kind", [OptionKind.CAPACITY_BLOCK, OptionKind.TRAINING_PLAN])
def test_an_unknown_extension_waits_for_approvers_who_mark_it_failed(make_bot, kind) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    unknown_for_good(bot, kind, shown_after=timedelta(days=30))
    _, token = bot.command("list waiting", user=APPROVER)
    bot.wait()
    blocks = bot.responses(token)[-1]["blocks"]
    buttons = [ActionId.EXTENSION_CHECK.value, ActionId.EXTENSION_MARK_FAILED.value]
    assert action_ids(blocks) == buttons
    assert "purchase unknown" in str(blocks)
    # The requester may not decide it; Check again looks and finds nothing.
    _, token = bot.click(ActionId.EXTENSION_MARK_FAILED.value, "R1|1", REQUESTER)
    bot.wait()
    assert "Only approvers" in bot.responses(token)[-1]["text"]
    _, token = bot.click(ActionId.EXTENSION_CHECK.value, "R1|1", APPROVER)
    bot.wait()
    assert "still shows R1 ending before the extension" in bot.responses(token)[-1]["text"]
    _, token = bot.click(ActionId.EXTENSION_MARK_FAILED.value, "R1|1", APPROVER)
    bot.wait()
    assert "Extension 1 of R1 is failed." in bot.responses(token)[-1]["text"]
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.FAILED
    assert record.extended_usd == 0.0  # nothing counted as paid
    entries = [(e.action, e.actor) for e in bot.services.store.audit("R1")]
    assert ("extension-failed", APPROVER) in entries
    assert market(bot).extension_calls() == 1  # never bought again
    # Nothing waits any more, and the requester can ask for another extension.
    _, token = bot.command("list waiting", user=APPROVER)
    bot.wait()
    assert action_ids(bot.responses(token)[-1]["blocks"]) == []
    asked = bot.services.extensions.ask("R1", Actor(REQUESTER, False), 24)
    assert asked.extension.number == 2


def test_check_again_finds_an_extension_that_aws_shows_late(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    unknown_for_good(bot, OptionKind.CAPACITY_BLOCK, shown_after=3 * H)
    at(bot, bot.clock.now() + 2 * H)  # AWS shows it now; the bot stopped looking
    _, token = bot.click(ActionId.EXTENSION_CHECK.value, "R1|1", APPROVER)
    bot.wait()
    assert "Extension 1 of R1 is bought." in bot.responses(token)[-1]["text"]
    record = bot.record("R1")
    assert record.extension is not None and record.extension.status is ExtensionStatus.BOUGHT
    assert record.extended_usd == round(record.extension.offer.fee_usd, 2)
    assert market(bot).extension_calls() == 1
    # Marking it failed afterwards changes nothing: it is bought.
    _, token = bot.click(ActionId.EXTENSION_MARK_FAILED.value, "R1|1", APPROVER)
    bot.wait()
    assert "Extension 1 of R1 is bought." in bot.responses(token)[-1]["text"]


def test_check_again_on_an_unknown_extension_is_refused_to_a_non_approver(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    unknown_for_good(bot, OptionKind.CAPACITY_BLOCK, shown_after=3 * H)
    at(bot, bot.clock.now() + 2 * H)  # AWS shows it now: a look would find it bought
    audit_before = len(bot.services.store.audit("R1"))
    _, token = bot.click(ActionId.EXTENSION_CHECK.value, "R1|1", REQUESTER)
    bot.wait()
    said = bot.responses(token)[-1]["text"]
    assert said == ":warning: Only approvers can check an extension's purchase."
    ext = bot.record("R1").extension
    assert ext is not None and ext.status is ExtensionStatus.UNKNOWN  # nobody looked
    assert len(bot.services.store.audit("R1")) == audit_before
    with pytest.raises(NotAllowed, match="Only approvers can check"):
        bot.services.extensions.check_again("R1", 1, Actor(REQUESTER, False))
    assert bot.record("R1").extension.status is ExtensionStatus.UNKNOWN  # type: ignore[union-attr]
    # An approver's look finds it.
    _, token = bot.click(ActionId.EXTENSION_CHECK.value, "R1|1", APPROVER)
    bot.wait()
    assert "Extension 1 of R1 is bought." in bot.responses(token)[-1]["text"]
