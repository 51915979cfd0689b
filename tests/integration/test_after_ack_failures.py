"""A failure after the ack is told to the person where they acted: beside the message they
clicked (ephemeral, the message stays), or by DM from App Home (which has no response_url)."""

from __future__ import annotations

from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, BotUnderTest


def approvals_fail(bot: BotUnderTest) -> None:
    def redis_down(*_args: object) -> None:
        raise ConnectionError("Connection refused")

    bot.services.approvals.approve = redis_down  # type: ignore[method-assign]
    bot.expect_crashes()


def test_from_a_message_it_is_said_beside_the_card(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    approvals_fail(bot)
    bot.fake.reset()
    reply, token = bot.approve(request_id, APPROVER)
    assert reply.status == 200
    bot.wait()
    (sorry,) = bot.responses(token)
    assert "did not go through" in sorry["text"]
    assert sorry["response_type"] == "ephemeral"
    assert sorry["replace_original"] is False
    assert not [c for c in bot.fake.of("chat.postMessage") if c.args.get("channel") == APPROVER]


def test_from_app_home_it_comes_by_dm(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = submitted(bot)
    approvals_fail(bot)
    bot.fake.reset()
    reply, token = bot.approve(request_id, APPROVER, container="home")
    assert reply.status == 200
    bot.wait()
    assert bot.responses(token) == []
    (dm,) = [c for c in bot.fake.of("chat.postMessage") if c.args.get("channel") == APPROVER]
    assert "did not go through" in dm.args["text"]
