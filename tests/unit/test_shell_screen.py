"""What the shell shows for what the app sends: who a message is addressed to, updates in
place, and which buttons `press N` may click."""

from __future__ import annotations

from typing import Any

import pytest

from bot.adapters.slack.local_api import Call
from bot.shell.console_api import Ack
from bot.shell.people import People
from bot.shell.screen import ResponseTarget, Screen, Unpressable
from bot.shell.style import PLAIN

YOU, ALICE = "U0YOU", "U0ALICE"


def buttons(*labels: str, block_id: str = "b") -> list[dict[str, Any]]:
    elements = [
        {"type": "button", "text": {"type": "plain_text", "text": t}, "action_id": t, "value": t}
        for t in labels
    ]
    return [{"type": "actions", "block_id": block_id, "elements": elements}]


def post(channel: str, answer_channel: str, ts: str, **args: Any) -> Call:
    return Call(
        "chat.postMessage",
        {"channel": channel, **args},
        200,
        None,
        {
            "channel": answer_channel,
            "ts": ts,
        },
    )


def update(channel: str, ts: str, **args: Any) -> Call:
    return Call("chat.update", {"channel": channel, "ts": ts, **args}, 200)


def respond(token: str, **args: Any) -> Call:
    return Call("response_url", args, 200, token)


@pytest.fixture
def screen() -> Screen:
    return Screen(People(), PLAIN, {"CAPPROVALS": "approvals", "C0GENERAL": "general"})


def test_a_command_reply_replaced_at_its_response_url_is_updated_in_place(screen: Screen) -> None:
    screen.expect_responses("r1", ResponseTarget(YOU, "C0GENERAL"))
    shown = screen.show([], ("r1", Ack(200, {"text": "Comparing…"})))
    assert shown == "── ephemeral to you · message 1 ──\n  Comparing…"
    reply = respond("r1", text="done", blocks=buttons("Submit"), replace_original=True)
    assert screen.show([reply]).splitlines() == [
        "── ephemeral to you · message 1, updated in place ──",
        "  [1] Submit",
    ]


def test_without_replace_original_a_reply_is_a_new_message(screen: Screen) -> None:
    screen.expect_responses("r1", ResponseTarget(YOU, "C0GENERAL"))
    screen.show([], ("r1", Ack(200, {"text": "first"})))
    shown = screen.show([respond("r1", text="second", response_type="in_channel")])
    assert shown.splitlines()[0] == "── #general · message 2 ──"


def test_a_dm_and_a_channel_post_say_where_they_went(screen: Screen) -> None:
    shown = screen.show(
        [post(ALICE, "D0ALICE", "1.1", text="hi <@U0YOU>"), post("CAPPROVALS", "CAPPROVALS", "1.2")]
    )
    assert shown.splitlines() == [
        "── DM to @alice · message 1 ──",
        "  hi @you",
        "── #approvals · message 2 ──",
    ]


def test_a_button_updated_away_cannot_be_pressed(screen: Screen) -> None:
    card = post("CAPPROVALS", "CAPPROVALS", "1.1", blocks=buttons("Approve", "Reject"))
    shown = screen.show([card, update("CAPPROVALS", "1.1", text="Approved")])
    assert shown.splitlines()[-2] == "── #approvals · message 1, updated in place ──"
    with pytest.raises(Unpressable, match=r"Button 2 \(Reject\) is not there any more"):
        screen.pressable(2, ALICE)
    screen.show([update("CAPPROVALS", "1.1", text="Approved again")])
    with pytest.raises(Unpressable, match="latest output has no buttons"):
        screen.pressable(1, ALICE)


def test_an_output_without_buttons_leaves_nothing_to_press(screen: Screen) -> None:
    screen.show([post("CAPPROVALS", "CAPPROVALS", "1.1", blocks=buttons("Approve"))])
    screen.show([post(YOU, "D0YOU", "1.2", text="no buttons here")])
    with pytest.raises(Unpressable, match=r"latest output has no buttons: `show N`"):
        screen.pressable(1, ALICE)  # not Approve on the older message
    screen.show([post("CAPPROVALS", "CAPPROVALS", "1.3", blocks=buttons("Other", block_id="c"))])
    assert screen.pressable(1, ALICE).button.label == "Other"
    with pytest.raises(Unpressable, match=r"no button 2 \(buttons: 1 to 1\)"):
        screen.pressable(2, ALICE)


def test_an_older_message_shown_again_numbers_its_buttons(screen: Screen) -> None:
    screen.show([post("CAPPROVALS", "CAPPROVALS", "1.1", blocks=buttons("Approve", "Reject"))])
    screen.show([post(YOU, "D0YOU", "1.2", text="no buttons here")])
    assert screen.reshow(1, ALICE).splitlines() == [
        "── #approvals · message 1 ──",
        "  [1] Approve  [2] Reject",
    ]
    assert screen.pressable(2, ALICE).button.label == "Reject"
    with pytest.raises(Unpressable, match="only you can see"):
        screen.reshow(2, ALICE)
    with pytest.raises(Unpressable, match="no message 7"):
        screen.reshow(7, ALICE)


def test_only_its_owner_can_press_a_button_on_an_ephemeral_message(screen: Screen) -> None:
    screen.expect_responses("r1", ResponseTarget(YOU, "C0GENERAL"))
    screen.show([], ("r1", Ack(200, {"text": "quote", "blocks": buttons("Submit")})))
    with pytest.raises(Unpressable, match="only you can see: `as you` first"):
        screen.pressable(1, ALICE)
    assert screen.pressable(1, YOU).message is not None


def test_app_home_is_shown_for_its_user_and_its_buttons_click_the_current_view(
    screen: Screen,
) -> None:
    view = {"type": "home", "blocks": buttons("Approve")}
    published = Call("views.publish", {"user_id": ALICE}, 200, None, {"view": {**view, "id": "V1"}})
    assert screen.show([published]).splitlines() == ["── App Home of @alice ──", "  [1] Approve"]
    again = Call("views.publish", {"user_id": ALICE}, 200, None, {"view": {**view, "id": "V2"}})
    assert screen.show([again]).splitlines()[0] == "── App Home of @alice, updated ──"
    pressed = screen.pressable(1, ALICE)
    assert pressed.home is not None and pressed.home["id"] == "V2"
    with pytest.raises(Unpressable, match="only alice can see"):
        screen.pressable(1, YOU)


def test_a_modal_opened_is_shown_to_whoever_had_the_trigger(screen: Screen) -> None:
    screen.expect_trigger("t1", ALICE)
    view = {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Reject request"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "blocks": [],
    }
    opened = Call("views.open", {"trigger_id": "t1"}, 200, None, {"view": {**view, "id": "V9"}})
    assert screen.show([opened]).splitlines() == [
        "── modal opened for alice: Reject request ──",
        "  [Reject]",
    ]
    (modal,) = screen.take_opened()
    assert (modal.user, modal.view["id"]) == (ALICE, "V9")
    assert screen.take_opened() == []


def test_delete_original_removes_the_message_and_failed_calls_are_not_shown(
    screen: Screen,
) -> None:
    screen.expect_responses("r1", ResponseTarget(YOU, "C0GENERAL"))
    screen.show([], ("r1", Ack(200, {"text": "temporary", "blocks": buttons("Go")})))
    failed = Call("chat.postMessage", {"channel": "CAPPROVALS"}, 429)
    shown = screen.show([failed, respond("r1", delete_original="true")])
    assert shown == "── ephemeral to you · message 1 deleted ──"
    with pytest.raises(Unpressable, match="latest output has no buttons"):
        screen.pressable(1, YOU)
