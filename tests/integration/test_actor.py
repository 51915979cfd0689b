"""Who is acting, decided once: the middleware makes one Actor per Slack request, the
services decide with it, and the approver directory is asked only when the answer
matters, at most once per request. A service refuses a non-approver by itself, whoever
calls it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from aws_sandbox import AnswerFault
from bot.blocks.ids import ActionId
from bot.domain.lifecycle import State
from bot.services.actor import Actor, NotAllowed
from tests import slack_payloads as payloads
from tests.integration.test_buy_once import approved, market
from tests.integration.test_extensions import active, extend_value
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest


def count_approver_questions(bot: BotUnderTest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every question put to the approver directory, by user."""
    asked: list[str] = []
    directory = bot.services.approvals.is_approver

    def counted(user: str) -> bool:
        asked.append(user)
        return directory(user)

    monkeypatch.setattr(bot.services.approvals, "is_approver", counted)
    return asked


def unknown_purchase(bot: BotUnderTest) -> str:
    """A Capacity Block whose purchase answer was lost and that AWS does not show yet."""
    request_id = approved(bot, "capacity-block")
    market(bot).conditions.lose_answers(
        "PurchaseCapacityBlock", AnswerFault.READ_TIMEOUT, shown_after=timedelta(days=30)
    )
    bot.wait()
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    return request_id


def test_the_purchase_service_refuses_a_non_approver_whoever_calls_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = unknown_purchase(bot)
    audit_before = len(bot.services.store.audit(request_id))
    requester = Actor(REQUESTER, bot.services.approvals.is_approver)
    with pytest.raises(NotAllowed, match="Only approvers can mark a purchase failed"):
        bot.services.purchases.mark_failed(request_id, requester)
    with pytest.raises(NotAllowed, match="Only approvers can check a purchase"):
        bot.services.purchases.check_again(request_id, requester)
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN
    assert len(bot.services.store.audit(request_id)) == audit_before
    # An actor whose approver status was decided elsewhere is taken at its word.
    with pytest.raises(NotAllowed):
        bot.services.purchases.mark_failed(request_id, Actor(APPROVER, False))
    record = bot.services.purchases.mark_failed(request_id, bot.actor(APPROVER))
    assert record is not None and record.state is State.FAILED
    assert market(bot).purchase_calls() == 1  # the one whose answer was lost


def test_a_non_approvers_click_on_mark_failed_is_refused_in_words(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    request_id = unknown_purchase(bot)
    _, token = bot.click(ActionId.PURCHASE_MARK_FAILED.value, request_id, REQUESTER)
    bot.wait()
    said = bot.responses(token)[-1]["text"]
    assert said == ":warning: Only approvers can mark a purchase failed."
    assert bot.record(request_id).state is State.PURCHASE_UNKNOWN


def test_the_directory_is_asked_once_per_request_and_only_when_it_matters(  # type: ignore[no-untyped-def]
    make_bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: BotUnderTest = make_bot()
    asked = count_approver_questions(bot, monkeypatch)
    bot.command("help")
    bot.wait()
    assert asked == []  # nothing in help depends on who approves
    # App Home asks for pending requests and pending extensions: one question.
    bot.post(*payloads.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"}))
    bot.wait()
    assert asked == [APPROVER]
    asked.clear()
    bot.command("list waiting", APPROVER)
    bot.wait()
    assert asked == [APPROVER]


def test_the_requester_extending_their_own_reservation_is_not_looked_up(  # type: ignore[no-untyped-def]
    make_bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: BotUnderTest = make_bot()
    active(bot)
    value = extend_value(bot)
    asked = count_approver_questions(bot, monkeypatch)
    _, token = bot.click(ActionId.EXTEND.value, value, REQUESTER)
    bot.wait()
    assert "Asked the approvers to extend" in bot.responses(token)[-1]["text"]
    assert asked == []  # the requester may ask: who approves does not matter
