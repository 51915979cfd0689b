"""A button whose value was edited (or comes from a bot that no longer exists) is refused
saying what it should carry, and changes nothing."""

from __future__ import annotations

import pytest

from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from tests.integration.test_extensions import active
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest


@pytest.mark.parametrize(
    ("action", "value", "expected"),
    [
        (ActionId.EXTEND, "R1|forever", "a request id and hours, such as R12|48"),
        (ActionId.EXTEND, "R1|0", "a request id and hours, such as R12|48"),
        (ActionId.EXTENSION_APPROVE, "R1", "a request id and an extension number"),
        (ActionId.CLEANUP_NOW, "R1|1", "a request id such as R12"),
        (ActionId.DEPLOY_CLEANUP, "R1", "a deployment id such as D3"),
    ],
)
def test_a_forged_value_on_a_reservation_is_refused_and_changes_nothing(  # type: ignore[no-untyped-def]
    make_bot, action: ActionId, value: str, expected: str
) -> None:
    bot: BotUnderTest = make_bot()
    active(bot)
    before = bot.services.store.audit("R1")
    _, token = bot.click(action.value, value, REQUESTER)
    bot.wait()
    said = bot.responses(token)[-1]["text"]
    assert said.startswith(":warning: That button is malformed") and expected in said
    assert bot.services.store.audit("R1") == before


def test_a_forged_approve_is_refused_before_any_question(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = submitted(bot)
    _, token = bot.click(ActionId.APPROVE.value, f"{request_id} <!channel>", APPROVER)
    bot.wait()
    said = bot.responses(token)[-1]["text"]
    assert "malformed" in said and "&lt;!channel&gt;" in said  # escaped, never a mention
    assert not bot.fake.of("views.open")
    assert bot.record(request_id).state is State.PENDING_APPROVAL
