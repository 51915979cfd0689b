"""The Block Kit builders make what Slack accepts, at the edges too: the longest text a
record can carry, many approvals, long histories, long lists, many pending requests.
Checked with the rules the fake Web API applies (bot/adapters/slack/block_rules.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.adapters.slack.block_rules import message_problems, view_problems
from bot.blocks.help import help_blocks
from bot.blocks.home import home_view
from bot.blocks.reminders import extension_card
from bot.blocks.requests import list_blocks, request_card, requester_update, status_blocks
from bot.domain.audit import AuditEntry
from bot.domain.decisions import Approval, Rejection
from bot.domain.extension import Extension, ExtensionOffer, ExtensionStatus
from bot.domain.lifecycle import State
from tests.factories import make_record

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
AMPERSANDS = "&" * 2999  # each one is five characters once escaped


def failed(**kw: object):  # type: ignore[no-untyped-def]
    return make_record(state=State.FAILED, failure=AMPERSANDS + "<!channel>", **kw)


def many_approvals():  # type: ignore[no-untyped-def]
    approvals = tuple(Approval(user=f"U{n:010d}", at=NOW) for n in range(200))
    return make_record(state=State.APPROVED, approvals=approvals, required_approvals=2)


def test_the_card_of_a_record_with_the_longest_failure_is_accepted() -> None:
    for record in (failed(), failed(approval_deadline=NOW), many_approvals()):
        assert message_problems("card", request_card(record)) == []


def test_a_rejected_card_and_the_status_with_a_long_history_are_accepted() -> None:
    rejection = Rejection(user="U0APPROVER", at=NOW, reason=AMPERSANDS)
    record = make_record(state=State.REJECTED, rejection=rejection)
    history = [
        AuditEntry(record.id, "U0APPROVER", "x" * 200, "a", "b", NOW, detail="d" * 500)
        for _ in range(300)
    ]
    assert message_problems("card", request_card(record)) == []
    assert message_problems("status", status_blocks(failed(), history)) == []


def test_a_long_list_and_a_busy_home_tab_are_accepted() -> None:
    records = [failed(request_id=f"R{n}") for n in range(200)]
    assert message_problems("list", list_blocks("All", records, "none")) == []
    waiting = [make_record(f"R{n}", state=State.PENDING_APPROVAL) for n in range(40)]
    view = home_view(records[:20], (waiting[:10], len(waiting)), NOW, mine_total=200)
    assert view_problems(view) == []


def test_help_and_the_requesters_message_are_accepted() -> None:
    assert message_problems("help", help_blocks(NOW)) == []
    text = requester_update(failed())
    assert (
        message_problems(
            text, [{"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}]
        )
        == []
    )


def test_an_extension_card_with_the_longest_refusal_is_accepted() -> None:
    offer = ExtensionOffer(
        offering_id="o", hours=24, start=NOW, end=NOW + timedelta(days=1), fee_usd=10.0
    )
    extension = Extension(
        number=1,
        offer=offer,
        requested_by="U0REQUESTER",
        requested_at=NOW,
        status=ExtensionStatus.FAILED,
        approved_by="U0APPROVER",
        reason=AMPERSANDS,
    )
    message = extension_card("R1", "U0REQUESTER", extension)
    assert message_problems(message.text, message.blocks) == []
