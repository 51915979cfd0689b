"""`/gpu list`: every request reachable a page at a time, newest id first, with a note of
what is not on the page; App Home points to the same pages."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from bot.domain.audit import AuditEntry
from bot.domain.lifecycle import State
from tests.factories import NOW, make_record
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest


def _store_requests(bot: BotUnderTest, count: int, state: State = State.QUOTED) -> None:
    """`count` requests made in the same second, as a busy minute of the bot would."""
    for _ in range(count):
        request_id = bot.services.store.id_for(f"test-list:{uuid.uuid4().hex}")
        record = make_record(request_id, state=state, requester=REQUESTER, created_at=NOW)
        entry = AuditEntry(request_id, REQUESTER, "created", state.value, state.value, NOW)
        bot.services.store.create(record, entry)


def _listed(bot: BotUnderTest, text: str, user: str = REQUESTER) -> tuple[list[str], str]:
    """The request ids `/gpu TEXT` listed, in order, and the whole answer as text."""
    reply, token = bot.command(text, user)
    assert reply.status == 200
    bot.wait()
    (answer,) = bot.responses(token)
    blocks = answer.get("blocks", [])
    assert len(blocks) <= 50  # Slack's limit for a message
    for block in blocks:
        assert len(block.get("text", {}).get("text", "")) <= 3000  # Slack's section limit
    shown = json.dumps(blocks, ensure_ascii=False) + answer.get("text", "")
    return re.findall(r"\*(R\d+)\*", shown), shown


def test_sixty_requests_are_all_reachable_newest_id_first(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    _store_requests(bot, 60)
    first, shown = _listed(bot, "list")
    assert first == [f"R{n}" for n in range(60, 40, -1)]
    assert "(1–20 of 60)" in shown
    assert "40 more: `/gpu list 2` shows the next 20." in shown
    second, shown = _listed(bot, "list 2")
    assert second == [f"R{n}" for n in range(40, 20, -1)]
    third, shown = _listed(bot, "list 3")
    assert third == [f"R{n}" for n in range(20, 0, -1)]
    assert "more" not in shown
    assert sorted(first + second + third, key=lambda i: int(i[1:])) == [
        f"R{n}" for n in range(1, 61)
    ]
    beyond, shown = _listed(bot, "list 4")
    assert beyond == [] and "No more: there are 60." in shown


def test_ids_made_in_the_same_second_list_by_number(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    _store_requests(bot, 12)
    ids, _ = _listed(bot, "list")
    assert ids == [f"R{n}" for n in range(12, 0, -1)]  # R12, R11, R10, R9 ... not R9, R12


def test_what_waits_for_an_approver_is_all_reachable(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    _store_requests(bot, 25, State.PENDING_APPROVAL)
    # Each with its Approve and Reject buttons: ten a page, inside a message's 50 blocks.
    ids, shown = _listed(bot, "list", APPROVER)
    assert ids == [f"R{n}" for n in range(1, 11)]
    assert shown.count('"gpu_approve"') == 10
    assert "15 more: `/gpu list waiting 2` shows the next 10." in shown
    ids, _ = _listed(bot, "list waiting 2", APPROVER)
    assert ids == [f"R{n}" for n in range(11, 21)]
    ids, shown = _listed(bot, "list waiting 3", APPROVER)
    assert ids == [f"R{n}" for n in range(21, 26)] and "more" not in shown


def test_a_bad_page_gets_the_usage(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    reply, _ = bot.command("list two")
    assert "Usage: `/gpu list [PAGE]`" in reply.body


def test_app_home_says_how_to_see_the_rest(make_bot) -> None:  # type: ignore[no-untyped-def]
    from handlers.home import publish_home

    bot: BotUnderTest = make_bot()
    _store_requests(bot, 30)
    client: Any = bot.app.client
    publish_home(bot.services, client, bot.actor(REQUESTER))
    (published,) = bot.fake.of("views.publish")
    shown = json.dumps(published.args["view"], ensure_ascii=False)
    assert "10 more: `/gpu list 2` shows the next 10." in shown
