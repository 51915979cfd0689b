"""Budgets that hold when approvals race: the team's month is judged again at each decisive
approval, in the same compare-and-set as the approval (transition.lua's budget guard), so
two approvals that together go over can never both pass on one approver.

Each race is made certain, not likely: the writes of the approvals wait until every one of
them has read the team's totals (tests/races.py, TotalsReadBeforeWrites). A block of 2x
p5.48xlarge for 3 days costs $4,983.55; one more day of it, $1,661.18."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bot.blocks.ids import ActionId
from bot.domain.budgets import month_of
from bot.domain.extension import ExtensionStatus
from bot.domain.lifecycle import State
from bot.domain.money import dollars
from tests.integration.test_extension_money import ask
from tests.integration.test_extensions import active, later
from tests.integration.test_slack_flow import submit_form, submitted
from tests.races import TotalsReadBeforeWrites
from tests.slack_harness import APPROVER, APPROVER_2, REQUESTER, BotUnderTest

# Three blocks of the same shape on different dates: each $4,983.55.
REQUESTS = [
    f'2x p5.48xlarge 3d from 2026-12-{day} ec2 util=90% reason="load test"' for day in (14, 17, 20)
]
APPROVED_OR_AFTER = {State.APPROVED, State.PURCHASING, State.PAYMENT_PENDING, State.SCHEDULED}


def form(bot: BotUnderTest, action: str, value: str, user: str) -> dict[str, Any]:
    """The confirmation an Approve button opens for `user`."""
    trigger = f"T-race-{action}-{value}-{user}"
    bot.click(action, value, user, trigger_id=trigger)
    (view,) = bot.opened(trigger)
    return view


def confirm_all(bot: BotUnderTest, forms: list[tuple[dict[str, Any], str]], readers: int) -> None:
    """Submit every confirmation at once; no write of them lands before all read the totals."""
    gate = TotalsReadBeforeWrites(readers)
    gate.install(bot.services.store)

    def confirm(item: tuple[dict[str, Any], str]) -> int:
        view, user = item
        reply = bot.submit_view(view["callback_id"], {}, user, view["private_metadata"])
        return reply.status

    with ThreadPoolExecutor(len(forms)) as pool:
        assert list(pool.map(confirm, forms)) == [200] * len(forms)
    bot.wait()
    assert gate.held_writes >= 1, "the approvals did not race"


def committed(bot: BotUnderTest, team: str = REQUESTER) -> float:
    """The team-month's held and paid as the ledger keeps them."""
    return dollars(bot.services.store.team_month(team, "2026-12").committed)


def said(bot: BotUnderTest) -> str:
    """Everything the people who clicked were answered."""
    return json.dumps([c.args for c in bot.fake.of("response_url")])


def test_three_blocks_approved_at_once_never_all_pass_on_one_approver_each(make_bot) -> None:  # type: ignore[no-untyped-def]
    # $12,000 holds two of the three blocks ($9,967.10), not the third ($14,950.65).
    bot = make_bot(budgets=f"{REQUESTER}=12000")
    ids = [submitted(bot, text) for text in REQUESTS]
    assert [bot.record(i).required_approvals for i in ids] == [1, 1, 1]  # each fits alone
    forms = [(bot.approval_form(i, APPROVER), APPROVER) for i in ids]
    confirm_all(bot, forms, readers=3)
    records = [bot.record(i) for i in ids]
    passed = [r for r in records if r.state in APPROVED_OR_AFTER]
    held_back = [r for r in records if r.state is State.PENDING_APPROVAL]
    assert len(passed) == 2 and len(held_back) == 1
    (waiting,) = held_back
    # Over the budget now: it needs a second approver, and the first approval is kept.
    assert waiting.required_approvals == 2 and len(waiting.approvals) == 1
    assert waiting.budget is not None and waiting.budget.over
    assert committed(bot) <= 12000
    # The second approver completes it: two approvers may take the team over.
    bot.approve(waiting.id, APPROVER_2)
    bot.wait()
    assert bot.record(waiting.id).state in APPROVED_OR_AFTER | {State.PURCHASING}
    assert committed(bot) == pytest.approx(3 * 4983.55)


def test_under_refuse_the_approval_that_loses_the_race_is_refused_saying_by_how_much(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000", over_budget="refuse")
    ids = [submitted(bot, text) for text in REQUESTS[:2]]
    forms = [(bot.approval_form(i, APPROVER), APPROVER) for i in ids]
    forms[1] = (bot.approval_form(ids[1], APPROVER_2), APPROVER_2)
    confirm_all(bot, forms, readers=2)
    records = [bot.record(i) for i in ids]
    assert sorted(r.state is State.PENDING_APPROVAL for r in records) == [False, True]
    (refused,) = [r for r in records if r.state is State.PENDING_APPROVAL]
    assert refused.approvals == ()  # nothing recorded for the refused approval
    assert committed(bot) == pytest.approx(4983.55)
    texts = said(bot)
    assert "Not approved: it takes U0REQUESTER to $9,967.10 in 2026-12" in texts
    assert "$3,967.10 over its $6,000.00 budget" in texts


def test_an_extension_and_a_request_approved_at_once_do_not_both_pass(make_bot) -> None:  # type: ignore[no-untyped-def]
    # R1 paid $4,983.55; its extension $1,661.18 and a new block $4,983.55 each fit under
    # $11,000, together ($11,628.28) they do not.
    bot = make_bot(budgets=f"{REQUESTER}=11000", over_budget="refuse")
    active(bot)
    ask(bot)
    assert bot.record("R1").extension is not None
    later(bot)  # the extension's card went out this second; posts are paced
    store = bot.services.store
    store.redis.incr(store.key("seq"))  # R1 was recorded by the test, not numbered by the bot
    request_id = submitted(bot, REQUESTS[2])
    forms = [
        (form(bot, ActionId.EXTENSION_APPROVE.value, "R1|1", APPROVER), APPROVER),
        (bot.approval_form(request_id, APPROVER_2), APPROVER_2),
    ]
    confirm_all(bot, forms, readers=2)
    ext = bot.record("R1").extension
    assert ext is not None
    extension_passed = ext.status is not ExtensionStatus.PENDING_APPROVAL
    request_passed = bot.record(request_id).state is not State.PENDING_APPROVAL
    assert extension_passed != request_passed  # exactly one of the two
    assert committed(bot) <= 11000


def test_two_submissions_then_two_approvals_at_once_hold_the_budget(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=6000")
    from tests.integration.test_slack_flow import quoted

    ids = [quoted(bot, text) for text in REQUESTS[:2]]
    with ThreadPoolExecutor(2) as pool:  # both submitted at once: neither holds anything yet
        replies = list(pool.map(lambda i: submit_form(bot, i, reason="x"), ids))
    assert [r.status for r in replies] == [200, 200]
    bot.wait()
    records = [bot.record(i) for i in ids]
    assert [r.state for r in records] == [State.PENDING_APPROVAL] * 2
    # Each card says what else waits for approvers in the team's month.
    assert all(r.budget is not None for r in records)
    forms = [(bot.approval_form(i, APPROVER), APPROVER) for i in ids]
    confirm_all(bot, forms, readers=2)
    passed = [i for i in ids if bot.record(i).state is not State.PENDING_APPROVAL]
    assert len(passed) == 1
    assert committed(bot) <= 6000
    assert month_of(bot.record(passed[0]).window[0]) == "2026-12"
    assert dollars(bot.services.store.team_month(REQUESTER, "2026-12").asked) == 4983.55


def test_the_card_says_what_else_waits_for_approvers_in_the_month(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot(budgets=f"{REQUESTER}=20000")
    first = submitted(bot, REQUESTS[0])
    second = submitted(bot, REQUESTS[1])
    budget = bot.record(second).budget
    assert budget is not None and (budget.pending_n, budget.pending_usd) == (1, 4983.55)
    confirm = json.dumps(bot.approval_form(first, APPROVER))
    assert "1 other request for $4,984 wait for approvers" in confirm
