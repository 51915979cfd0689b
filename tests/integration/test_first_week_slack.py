"""What a user's first week showed through the real Bolt app: what the bot said, what it
checked up front and what it showed to whom."""

from __future__ import annotations

import json

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.lifecycle import State
from bot.domain.request import REASON_NEEDED
from tests.integration.test_slack_edges import _keys
from tests.integration.test_slack_flow import quoted, submit_form
from tests.slack_harness import REQUESTER, BotUnderTest
from tests.slack_payloads import select, text_input

RESEARCH_ROLE = "arn:aws:iam::111122223333:role/gpu-bot"


def _plain(blocks: object) -> str:
    """Blocks as text, with the arrows and dashes as people read them."""
    return json.dumps(blocks, ensure_ascii=False)


REQUEST = "2x p5.48xlarge 3d from 2026-12-14 ec2"


# --- accounts ---------------------------------------------------------------------------


def _form_values(**more: dict[str, object]) -> dict[str, dict[str, object]]:
    return {
        "count": {"type": "number_input", "value": "2"},
        "instance_type": select("p5.48xlarge"),
        "duration": text_input("3d"),
        "start_date": {"type": "datepicker", "selected_date": "2026-12-14"},
        "region": text_input("us-east-1"),
        "environment": select("ec2"),
        "workload": select("training"),
        "utilization": {"type": "number_input", "value": "90"},
        **more,
    }


def test_an_unknown_account_is_refused_in_the_ack_naming_the_known_ones(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(accounts={"research": RESEARCH_ROLE})
    before = _keys(bot)
    for sub in ("quote", "reserve"):
        reply, token = bot.command(f"{sub} {REQUEST} account=nosuch")
        assert reply.status == 200
        assert 'there is no account "nosuch"' in reply.body, reply.body
        assert "account=default, account=research" in reply.body
        bot.wait()
        assert bot.responses(token) == []  # nothing was started to answer later
    assert _keys(bot) == before  # no request left behind, failed or otherwise
    reply, token = bot.command(f"quote {REQUEST} account=research")
    bot.wait()
    assert "Recommended" in json.dumps(bot.responses(token)[-1]["blocks"])


def test_the_reserve_form_asks_for_the_account_when_there_are_several(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(accounts={"research": RESEARCH_ROLE})
    bot.command("reserve")
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    blocks = {b.get("block_id"): b for b in opened.view()["blocks"]}
    account = blocks[FormBlock.ACCOUNT.value]["element"]
    assert [o["value"] for o in account["options"]] == ["default", "research"]
    assert account["initial_option"]["value"] == "default"
    # A forged value is refused on the field, and nothing is stored.
    before = _keys(bot)
    values = _form_values(account=select("nosuch"))
    reply = bot.submit_view(CallbackId.RESERVE_FORM.value, values, REQUESTER)
    answer = json.loads(reply.body)
    assert answer["response_action"] == "errors"
    assert 'no account "nosuch"' in answer["errors"][FormBlock.ACCOUNT.value]
    bot.wait()
    assert _keys(bot) == before
    token, url = bot.new_response_url()
    values = _form_values(account=select("research"))
    meta = json.dumps({"response_url": url})
    assert bot.submit_view(CallbackId.RESERVE_FORM.value, values, REQUESTER, meta).body == ""
    bot.wait()
    blocks = bot.responses(token)[-1]["blocks"]
    request_id = blocks[-1]["elements"][0]["value"]
    assert bot.record(request_id).request.account == "research"


def test_with_one_account_the_form_does_not_ask(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.command("reserve")
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    assert FormBlock.ACCOUNT.value not in {b.get("block_id") for b in opened.view()["blocks"]}


# --- the reason -------------------------------------------------------------------------


def test_the_reason_is_one_rule_said_the_same_where_it_is_asked(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    bot.command("reserve")
    bot.wait()
    (opened,) = bot.fake.of("views.open")
    blocks = {b.get("block_id"): b for b in opened.view()["blocks"]}
    field = blocks[FormBlock.REASON.value]
    # Comparing needs no reason; the form says at once that submitting will.
    assert field["optional"] is True
    assert REASON_NEEDED in field["hint"]["text"]
    request_id = quoted(bot, REQUEST)  # no reason given
    answer = json.loads(submit_form(bot, request_id, reason="  ").body)
    assert answer["errors"] == {FormBlock.REASON.value: f"{REASON_NEEDED}: give one."}
    bot.wait()
    assert bot.record(request_id).state is State.QUOTED
    assert submit_form(bot, request_id, reason="load test").body == ""


# --- the limit for one request ------------------------------------------------------------


def test_with_a_limit_the_quote_recommends_what_can_be_submitted(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot(max_request_usd=6000)
    _reply, token = bot.command(f"reserve {REQUEST} util=50%")
    bot.wait()
    blocks = bot.responses(token)[-1]["blocks"]
    shown = json.dumps(blocks)
    # On-Demand would cost $3,962.88 at 50% but up to $7,925.76: the block that fits wins.
    assert "Recommended: Capacity Block*, $4,983.55" in shown
    assert "On-Demand is left out: it can cost up to $7,925.76" in shown
    assert "cannot be submitted: it can cost up to $7,925.76, above the $6,000.00 limit" in shown
    request_id = blocks[-1]["elements"][0]["value"]
    bot.click(ActionId.SUBMIT_OPEN.value, request_id, REQUESTER)
    bot.wait()
    choice = next(
        b
        for b in bot.fake.of("views.open")[-1].view()["blocks"]
        if b.get("block_id") == FormBlock.CHOICE.value
    )
    offered = [o["value"] for o in choice["element"]["options"]]
    assert choice["element"]["initial_option"]["value"] == "capacity-block:0"
    assert not [v for v in offered if v.startswith(("on-demand:", "on-demand-reservation:"))]
    assert submit_form(bot, request_id, "capacity-block:0", "load test").body == ""
    bot.wait()
    assert bot.record(request_id).state is State.PENDING_APPROVAL


# --- after an extension ---------------------------------------------------------------------


def test_after_an_extension_every_place_shows_the_new_window_and_the_total_paid(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from bot.domain.extension import ExtensionStatus
    from tests import slack_payloads as payloads
    from tests.integration.test_extensions import extend_value
    from tests.integration.test_purchasing import BLOCK, approve
    from tests.integration.test_slack_flow import submitted
    from tests.slack_harness import APPROVER

    bot: BotUnderTest = make_bot()
    request_id = submitted(bot, BLOCK)
    approve(bot, request_id)
    bought = bot.record(request_id).reservation
    assert bought is not None and bought.fee_usd is not None
    bot.clock.set(bought.start + timedelta(minutes=1))
    bot.wait()
    bot.clock.set(bought.end - timedelta(hours=24))
    bot.wait()
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    bot.approve(f"{request_id}|1", APPROVER, action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    record = bot.record(request_id)
    assert record.extension is not None and record.extension.status is ExtensionStatus.BOUGHT
    fee = record.extension.offer.fee_usd
    new_end = bought.end + timedelta(hours=24)
    assert record.reservation is not None and record.reservation.end == new_end
    total = f"${bought.fee_usd + fee:,.2f}"
    window = f"→ {new_end:%Y-%m-%d %H:%M} UTC"
    # The approval card, updated in place.
    card = record.approval_message
    assert card is not None
    updates = [c for c in bot.fake.of("chat.update") if c.args.get("ts") == card.ts]
    shown = _plain(updates[-1].blocks())
    assert window in shown and f"{total} upfront" in shown, shown
    assert f"${bought.fee_usd:,.2f} and ${fee:,.2f} for extensions" in shown
    # /gpu status, /gpu list and App Home.
    _, token = bot.command(f"status {request_id}")
    bot.wait()
    status = _plain(bot.responses(token)[-1]["blocks"])
    assert window in status and total in status
    _, token = bot.command("list")
    bot.wait()
    listed = _plain(bot.responses(token)[-1]["blocks"])
    assert window in listed and total in listed
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    home = _plain(bot.fake.of("views.publish")[-1].view())
    assert f"*{request_id}*" in home and window in home and total in home


# --- what waits for an approver -------------------------------------------------------------


def test_pending_extensions_wait_in_the_list_and_in_app_home_with_their_buttons(make_bot) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from bot.domain.extension import ExtensionStatus
    from tests import slack_payloads as payloads
    from tests.integration.test_extensions import extend_value
    from tests.integration.test_purchasing import BLOCK, approve
    from tests.integration.test_slack_flow import action_ids, submitted
    from tests.slack_harness import APPROVER

    bot: BotUnderTest = make_bot()
    bought = submitted(bot, BLOCK)  # R1, bought and active, a day before its end
    approve(bot, bought)
    reservation = bot.record(bought).reservation
    assert reservation is not None
    bot.clock.set(reservation.start + timedelta(minutes=1))
    bot.wait()
    bot.clock.set(reservation.end - timedelta(hours=24))
    bot.wait()
    bot.click(ActionId.EXTEND.value, extend_value(bot), REQUESTER)
    bot.wait()
    start = (bot.clock.now() + timedelta(days=10)).date()
    waiting_request = submitted(bot, f"1x p5.48xlarge 2d from {start} ec2")  # R2
    # The approver's list: the request and the extension, each with its buttons.
    _, token = bot.command("list waiting", user=APPROVER)
    bot.wait()
    blocks = bot.responses(token)[-1]["blocks"]
    shown = _plain(blocks)
    assert "asks to extend R1" in shown and f"*{waiting_request}*" in shown
    # Oldest request first: R1's extension, then R2.
    assert action_ids(blocks) == [
        ActionId.EXTENSION_APPROVE.value,
        ActionId.EXTENSION_REJECT.value,
        ActionId.APPROVE.value,
        ActionId.REJECT_OPEN.value,
    ]
    # The requester of R1 is no approver: nothing waits for them, and they are told so.
    _, token = bot.command("list waiting")
    bot.wait()
    assert "Only approvers" in bot.responses(token)[-1]["text"]

    def home() -> list[dict[str, object]]:
        bot.post(*payloads.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"}))
        bot.wait()
        return bot.fake.of("views.publish")[-1].view()["blocks"]  # type: ignore[no-any-return]

    view = home()
    assert "*Waiting for approval (2)*" in _plain(view)
    assert ActionId.EXTENSION_APPROVE.value in action_ids(view)
    # Approved from App Home: bought, and App Home shows what still waits.
    bot.fake.reset()
    bot.approve("R1|1", APPROVER, container="home", action_id=ActionId.EXTENSION_APPROVE.value)
    bot.wait()
    assert bot.record("R1").extension.status is ExtensionStatus.BOUGHT  # type: ignore[union-attr]
    (republished,) = bot.fake.of("views.publish")
    after = republished.view()["blocks"]
    assert "*Waiting for approval (1)*" in _plain(after)
    assert ActionId.EXTENSION_APPROVE.value not in action_ids(after)


# --- who sees a request -----------------------------------------------------------------------


def test_status_shows_a_request_in_full_to_its_requester_and_the_approvers_only(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_slack_flow import submitted
    from tests.slack_harness import APPROVER, OUTSIDER

    bot: BotUnderTest = make_bot()
    request_id = submitted(bot, REQUEST, reason="secret launch")

    def status(user: str) -> str:
        _, token = bot.command(f"status {request_id}", user=user)
        bot.wait()
        return _plain(bot.responses(token)[-1]["blocks"])

    for who in (REQUESTER, APPROVER):
        full = status(who)
        assert "secret launch" in full and "$4,983.55" in full and "submitted by" in full
    limited = status(OUTSIDER)
    assert f"Request *{request_id}* is pending approval" in limited
    for detail in ("secret launch", "$4,983.55", "p5.48xlarge", "<@U0REQUESTER>", "submitted by"):
        assert detail not in limited
    # A workspace that shows every request to everyone.
    everyone: BotUnderTest = make_bot(requests_visible="all")
    _, token = everyone.command(f"status {request_id}", user=OUTSIDER)
    everyone.wait()
    assert "secret launch" in _plain(everyone.responses(token)[-1]["blocks"])
