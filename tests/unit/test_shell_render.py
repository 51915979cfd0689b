"""The shell's Block Kit renderer on what the real builders produce: the comparison, the
approval card and its confirm dialog, the modals and App Home."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bot.adapters.clock import ManualClock
from bot.app import build_services
from bot.blocks.home import home_view
from bot.blocks.ids import ActionId
from bot.blocks.modals import approve_form, reject_form, reserve_form, submit_form
from bot.blocks.quote import quote_blocks
from bot.blocks.requests import request_card
from bot.config import load_settings
from bot.domain.choices import candidate_by_value
from bot.domain.decisions import Approval
from bot.domain.lifecycle import State
from bot.domain.recommendation import Quote
from bot.domain.records import CapacityRecord
from bot.domain.request import RequestDraft
from bot.shell.mrkdwn import Names, to_text
from bot.shell.render import Renderer
from bot.shell.style import ANSI, PLAIN
from tests.factories import NOW, make_record

NAMES = Names({"U0YOU": "you", "U0ALICE": "alice"}, {"CAPPROVALS": "approvals"})
PLAIN_RENDERER = Renderer(PLAIN, NAMES)
REASON = "load test <!channel> & <@U0ALICE>"


@pytest.fixture(scope="module")
def quote() -> Quote:
    settings = load_settings(REDIS_URL="memory://", GPU_BOT_AWS="sandbox")
    services = build_services(settings, clock=ManualClock(NOW))
    text = f'2x p5.48xlarge 3d from 2026-12-14 ec2 reason="{REASON}"'
    return services.quotes.quote_text(text)


def pending(quote: Quote, **kw: Any) -> CapacityRecord:
    pick = candidate_by_value(quote, "capacity-block:0")
    assert pick is not None
    fields: dict[str, Any] = {
        "state": State.PENDING_APPROVAL,
        "requester": "U0YOU",
        "request": quote.request,
        "quote": quote,
        "choice": pick.choice(),
        "reason": REASON,
        "approval_deadline": NOW + timedelta(hours=24),
    }
    return make_record("R7", **(fields | kw))


def lines(rendered: list[str]) -> str:
    return "\n".join(rendered)


# --- messages -------------------------------------------------------------------------


def test_the_comparison_reads_as_text_with_numbered_buttons(quote: Quote) -> None:
    out = PLAIN_RENDERER.message(quote_blocks(quote, "R7"), "fallback")
    text = lines(out.lines)
    assert out.lines[0] == "== 2x p5.48xlarge for 3 days from 2026-12-14 00:00 UTC (us-east-1) =="
    assert out.lines[1] == "› training · ec2 · 100% expected utilisation"
    assert ":star: *Recommended: Capacity Block*" in text
    assert "─" * 40 in out.lines
    assert "› Quoted 2026-11-30 04:00 UTC · request R7" in out.lines
    assert out.lines[-1] == "[1] Submit for approval…  [2] Cancel"
    assert [(b.number, b.action_id, b.value) for b in out.buttons] == [
        (1, ActionId.SUBMIT_OPEN.value, "R7"),
        (2, ActionId.CANCEL.value, "R7"),
    ]
    assert "fallback" not in text  # the text is the notification, the blocks are shown


def test_numbering_continues_from_the_number_given(quote: Quote) -> None:
    out = PLAIN_RENDERER.message(quote_blocks(quote, "R7"), "", first_button=3)
    assert out.lines[-1] == "[3] Submit for approval…  [4] Cancel"
    assert [b.number for b in out.buttons] == [3, 4]


def test_escaped_user_text_stays_literal_and_real_mentions_become_names(quote: Quote) -> None:
    text = lines(PLAIN_RENDERER.message(request_card(pending(quote)), "").lines)
    assert "Requester: @you" in text  # the card's own mention
    assert "Why: \u201cload test <!channel> & <@U0ALICE>\u201d" in text  # typed by the user: inert
    assert "@channel" not in text
    assert "@alice" not in text


def test_a_message_without_blocks_shows_its_text_as_mrkdwn() -> None:
    out = PLAIN_RENDERER.message(
        [], ":warning: Ask <@U0ALICE> &amp; see <https://x.test/a|the runbook>"
    )
    assert out.lines == [":warning: Ask @alice & see the runbook (https://x.test/a)"]
    assert out.buttons == []


def test_the_approval_card_has_labelled_fields_and_approve_reject(quote: Quote) -> None:
    out = PLAIN_RENDERER.message(request_card(pending(quote)), "")
    assert out.lines[0] == "== GPU request R7: 2x p5.48xlarge =="
    for field in (
        "Requester: @you",
        "Instances: 2x p5.48xlarge (us-east-1)",
        "Option: Capacity Block (recommended)",
        "Workload: training · ec2 · 100% expected utilisation",
    ):
        assert field in out.lines
    assert any(line.startswith("Total: $") and line.endswith(" upfront") for line in out.lines)
    assert any("~Spot~" in line for line in out.lines)  # struck out: not possible
    assert out.lines[-1] == "[1] Approve…  [2] Reject…"


def test_the_approve_confirmation_shows_the_amount(quote: Quote) -> None:
    # Approve asks nothing itself (Slack would show its confirm before the bot can refuse
    # the requester): the bot opens this confirmation for an approver who may approve.
    record = pending(quote)
    out = PLAIN_RENDERER.message(request_card(record), "")
    approve = out.buttons[0]
    assert approve.action_id == ActionId.APPROVE.value
    assert "confirm" not in approve.element
    form = approve_form(record, {"request": record.id})
    amount = f"${record.total_usd:,.2f}"
    assert PLAIN_RENDERER.text(form["title"]) == "Approve this purchase?"
    assert PLAIN_RENDERER.view(form, first_button=1).lines == [
        f"Approve *{amount}* for 2x p5.48xlarge as a Capacity Block (request R7)? "
        "It is paid up front and cannot be cancelled.",
        f"[Approve {amount}]  [Cancel]",
    ]


def test_a_decided_card_has_no_buttons(quote: Quote) -> None:
    approval = Approval(user="U0ALICE", at=NOW)
    record = pending(quote, state=State.APPROVED, approvals=(approval,))
    out = PLAIN_RENDERER.message(request_card(record), "")
    assert out.buttons == []
    assert any("approved by @alice 2026-11-30 04:00 UTC" in line for line in out.lines)


# --- modals and App Home --------------------------------------------------------------


def test_the_submit_modal_shows_the_preselected_option_and_its_buttons(quote: Quote) -> None:
    record = pending(quote, state=State.QUOTED, reason="", choice=None)
    view = submit_form(record, quote, {"request": "R7"})
    out = PLAIN_RENDERER.view(view, first_button=None)
    assert out.lines[0] == "*2x p5.48xlarge for 3 days from 2026-12-14 00:00 UTC (us-east-1)*"
    assert out.lines[1].startswith("Option: Capacity Block · $")
    assert out.lines[1].endswith("★")
    assert out.lines[2] == f"Reason for the approvers: {REASON}"
    assert out.lines[-1] == "[Submit]  [Cancel]"


def test_the_reserve_form_shows_values_placeholders_and_hints() -> None:
    draft = RequestDraft(count=2, instance_type="p5.48xlarge")
    view = reserve_form(draft, ["p5.48xlarge", "p4d.24xlarge"], "us-east-1", {}, "Still needed.")
    out = PLAIN_RENDERER.view(view, first_button=None)
    assert out.lines[:6] == [
        "› Still needed.",
        "Instances: 2",
        "Instance type: p5.48xlarge",
        "Duration: (3d, 36h or 2w)",
        "  36h, 3d, 2w (up to 365 days)",
        "Start date (UTC):",
    ]
    assert "Interruptions (optional): n" in out.lines
    assert "Expected utilisation (%) (optional): (measured, else 100)" in out.lines
    assert out.lines[-1] == "[Compare options]  [Cancel]"


def test_the_reject_modal_asks_for_a_reason(quote: Quote) -> None:
    out = PLAIN_RENDERER.view(reject_form(pending(quote), {"request": "R7"}), None)
    assert out.lines == [
        "Reject request *R7* (2x p5.48xlarge for 3 days from 2026-12-14 00:00 UTC (us-east-1))?",
        "Reason (sent to the requester):",
        "[Reject]  [Cancel]",
    ]


def test_app_home_numbers_the_buttons_of_every_waiting_card(quote: Quote) -> None:
    mine = pending(quote, requester="U0ALICE")
    waiting = [pending(quote), pending(quote, id="R8")]
    out = PLAIN_RENDERER.view(home_view([mine], (waiting, len(waiting)), now=NOW), first_button=1)
    text = lines(out.lines)
    assert out.lines[0] == "== gpu-bot =="
    assert "*Waiting for approval (2)*" in out.lines
    assert "[1] Approve…  [2] Reject…" in out.lines
    assert "[3] Approve…  [4] Reject…" in out.lines
    assert [b.value for b in out.buttons] == ["R7", "R7", "R8", "R8"]
    assert "*R7* 2x p5.48xlarge" in text  # "Your requests" lists alice's own


# --- styles ---------------------------------------------------------------------------


def test_plain_output_has_no_escape_codes_and_ansi_output_has_emphasis(quote: Quote) -> None:
    blocks = quote_blocks(quote, "R7") + request_card(pending(quote))
    plain = lines(PLAIN_RENDERER.message(blocks, "").lines)
    assert "\x1b" not in plain
    ansi = Renderer(ANSI, NAMES).message(blocks, "")
    assert "\x1b[1mRecommended: Capacity Block\x1b[0m" in lines(ansi.lines)
    assert "\x1b[1;32mApprove…\x1b[0m" in ansi.lines[-1]  # primary
    assert "\x1b[1;31mReject…\x1b[0m" in ansi.lines[-1]  # danger


def test_control_characters_in_user_text_never_reach_the_terminal(quote: Quote) -> None:
    record = pending(quote, reason="clear \x1b[2J screen\x07 \x9b31m")
    for style in (PLAIN, ANSI):
        text = lines(Renderer(style, NAMES).message(request_card(record), "").lines)
        assert "clear [2J screen 31m" in text.replace("\x1b[1m", "").replace("\x1b[0m", "")
        assert "\x1b[2J" not in text and "\x07" not in text and "\x9b" not in text


@pytest.mark.parametrize(
    ("mrkdwn", "plain"),
    [
        ("<@U0YOU> and <@U0NOBODY>", "@you and @U0NOBODY"),
        ("<#CAPPROVALS> <#C1|general>", "#approvals #general"),
        ("<!here> <!channel> <!subteam^S1|@gpu-admins>", "@here @channel @gpu-admins"),
        ("<https://x.test>", "https://x.test"),
        ("&lt;!channel&gt; &amp;", "<!channel> &"),
        ("*bold* _it_ ~gone~ `code`", "*bold* _it_ ~gone~ `code`"),
    ],
)
def test_mrkdwn_to_plain_text(mrkdwn: str, plain: str) -> None:
    assert to_text(mrkdwn, PLAIN, NAMES) == plain


def test_ansi_emphasis_leaves_code_spans_and_snake_case_alone() -> None:
    text = to_text("*bold* `a*b*c` snake_case_name _it_", ANSI, NAMES)
    assert text == ("\x1b[1mbold\x1b[0m \x1b[36ma*b*c\x1b[0m snake_case_name \x1b[3mit\x1b[0m")


def test_unknown_blocks_and_elements_are_named_not_dropped() -> None:
    blocks = [
        {"type": "rich_text", "elements": []},
        {"type": "actions", "elements": [{"type": "overflow", "action_id": "x"}]},
        {"type": "image", "image_url": "https://x.test/i.png", "alt_text": "a chart"},
    ]
    assert PLAIN_RENDERER.message(blocks, "").lines == [
        "[rich_text block]",
        "‹overflow›",
        "[image: a chart]",
    ]


def test_blocks_sent_as_a_json_string_render_the_same(quote: Quote) -> None:
    from bot.adapters.slack.local_api import blocks_of

    blocks = quote_blocks(quote, "R7")
    assert blocks_of({"blocks": json.dumps(blocks)}) == blocks_of({"blocks": blocks}) == blocks


def test_a_quote_where_nothing_fits_can_be_dismissed(quote: Quote) -> None:
    from bot.domain.recommendation import Recommendation

    nothing = quote.model_copy(
        update={"recommendation": Recommendation(kind=None, reasons=["no option is possible"])}
    )
    blocks = quote_blocks(nothing, "R7")
    out = lines(PLAIN_RENDERER.message(blocks, "fallback").lines)
    assert "Nothing fits." in out and "[1] Dismiss" in out
    assert "Submit" not in out
    (dismiss,) = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert dismiss["action_id"] == ActionId.CANCEL.value and dismiss["value"] == "R7"
