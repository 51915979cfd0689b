"""The cleanup prompt's rules: repeat, escalate, answers, verification, and extensions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain import cleanup as c
from bot.domain import extension as x
from bot.domain.cleanup import (
    CleanupChoice,
    CleanupPrompt,
    Leftover,
    LeftoverKind,
    PromptStatus,
    Step,
)

NOW = datetime(2026, 12, 17, 11, 30, tzinfo=UTC)
ODCR = Leftover(LeftoverKind.CAPACITY_RESERVATION, "cr-1", "us-east-1", 55.04 * 2)
ENDPOINT = Leftover(LeftoverKind.ENDPOINT, "ep", "us-east-1", None, "plan expired")
CONFIG = Leftover(LeftoverKind.ENDPOINT_CONFIG, "ep-config", "us-east-1")
COMPONENT = Leftover(LeftoverKind.INFERENCE_COMPONENT, "ic-1", "us-east-1")
SOME = c.inventory([CONFIG, ODCR, ENDPOINT, COMPONENT, ODCR], NOW)
NONE = c.inventory([], NOW)


def test_inventory_costs_and_order() -> None:
    assert len(SOME.items) == 4  # the ODCR found twice counts once
    assert SOME.usd_per_hour == pytest.approx(110.08)
    assert SOME.usd_per_day == pytest.approx(110.08 * 24)
    kinds = [i.kind for i in SOME.in_cleanup_order()]
    assert kinds == [
        LeftoverKind.INFERENCE_COMPONENT,
        LeftoverKind.ENDPOINT,
        LeftoverKind.ENDPOINT_CONFIG,
        LeftoverKind.CAPACITY_RESERVATION,
    ]


def test_an_ignored_prompt_is_repeated_then_escalated_once() -> None:
    prompt, now = CleanupPrompt(), NOW
    steps = []
    for _ in range(6):
        plan = c.next_step(prompt, SOME, now)
        steps.append(plan.step)
        prompt = plan.prompt
        now = prompt.next_at or now
    assert steps == [Step.PROMPT, Step.PROMPT, Step.PROMPT, Step.ESCALATE, Step.WAIT, Step.WAIT]
    assert prompt.prompts == c.PROMPTS_BEFORE_ESCALATION and prompt.escalated


def test_a_job_run_early_waits() -> None:
    prompt = c.next_step(CleanupPrompt(), SOME, NOW).prompt
    assert c.next_step(prompt, SOME, NOW + timedelta(minutes=1)).step is Step.WAIT


def test_nothing_left_resolves_whatever_the_status() -> None:
    for status in (PromptStatus.OPEN, PromptStatus.KEPT, PromptStatus.DISOWNED):
        plan = c.next_step(CleanupPrompt(status=status, next_at=NOW + c.KEEP_FOR), NONE, NOW)
        assert plan.step is Step.RESOLVE and plan.prompt.status is PromptStatus.RESOLVED
    resolved = CleanupPrompt(status=PromptStatus.RESOLVED)
    assert c.next_step(resolved, SOME, NOW).step is Step.WAIT


def test_clean_up_now_deletes_until_a_fresh_look_finds_nothing() -> None:
    prompt = c.answer(CleanupPrompt(prompts=1), CleanupChoice.CLEAN_UP, "U1", NOW)
    plan = c.next_step(prompt, SOME, NOW)
    assert plan.step is Step.DELETE and plan.prompt.next_at == NOW + c.VERIFY_AFTER
    # still there at the next look: delete again (never resolved on the delete's word)
    again = c.next_step(plan.prompt, SOME, NOW + c.VERIFY_AFTER)
    assert again.step is Step.DELETE
    assert c.next_step(again.prompt, NONE, NOW + 2 * c.VERIFY_AFTER).step is Step.RESOLVE


def test_keep_for_a_day_asks_again_a_day_later_and_starts_the_count_over() -> None:
    prompt = c.answer(CleanupPrompt(prompts=2), CleanupChoice.KEEP, "U1", NOW)
    assert prompt.prompts == 0 and prompt.next_at == NOW + c.KEEP_FOR
    assert c.next_step(prompt, SOME, NOW + timedelta(hours=1)).step is Step.WAIT
    plan = c.next_step(prompt, SOME, NOW + c.KEEP_FOR)
    assert plan.step is Step.PROMPT and plan.prompt.prompts == 1


def test_not_mine_goes_to_the_approvers_at_once() -> None:
    prompt = c.answer(CleanupPrompt(prompts=1), CleanupChoice.NOT_MINE, "U1", NOW)
    plan = c.next_step(prompt, SOME, NOW)
    assert plan.step is Step.ESCALATE and plan.prompt.escalated
    assert prompt.answered_by == "U1"


def test_no_answer_after_it_is_resolved() -> None:
    with pytest.raises(c.AnswerRefused):
        c.answer(CleanupPrompt(status=PromptStatus.RESOLVED), CleanupChoice.KEEP, "U1", NOW)


# --- extensions -------------------------------------------------------------------------

START = NOW - timedelta(days=3)


def test_when_a_reservation_can_be_extended() -> None:
    assert x.extension_refusal("capacity-block", START, NOW, NOW - timedelta(hours=2)) is None
    assert x.extension_refusal("training-plan", START, NOW, NOW - timedelta(days=2)) is None
    assert "less than an hour" in str(
        x.extension_refusal("capacity-block", START, NOW, NOW - timedelta(minutes=59))
    )
    assert "56 days" in str(
        x.extension_refusal("capacity-block", NOW, NOW + timedelta(days=70), NOW)
    )
    assert "Capacity Blocks and training plans" in str(
        x.extension_refusal("on-demand-reservation", START, NOW, NOW - timedelta(days=1))
    )
    assert x.extension_hours_valid(72, 24)
    assert not x.extension_hours_valid(72, 36)
    assert not x.extension_hours_valid(181 * 24, 48)


def _offer(fee: float, days: int = 1) -> x.ExtensionOffer:
    return x.ExtensionOffer(
        offering_id="o", hours=24 * days, start=NOW, end=NOW + timedelta(days=days), fee_usd=fee
    )


def test_a_moved_price_or_window_is_refused() -> None:
    assert not x.price_moved(_offer(100.0), _offer(100.0))
    assert not x.price_moved(_offer(100.0), _offer(90.0))
    assert x.price_moved(_offer(100.0), _offer(100.02))
    assert x.price_moved(_offer(100.0), _offer(100.0, days=2))


def test_the_money_rule_for_extensions() -> None:
    ext = x.Extension(number=1, offer=_offer(10.0), requested_by="U1", requested_at=NOW)
    assert x.approver_refusal(ext, "U9", is_approver=True, requester="U1") is None
    assert "your own" in str(x.approver_refusal(ext, "U1", is_approver=True, requester="U1"))
    assert "only approvers" in str(x.approver_refusal(ext, "U9", False, "U1"))
    # asked by someone else on the requester's behalf: the requester cannot approve either
    other = ext.model_copy(update={"requested_by": "U2"})
    assert x.approver_refusal(other, "U1", True, "U1") is not None
    done = ext.model_copy(update={"status": x.ExtensionStatus.BOUGHT})
    assert "already bought" in str(x.approver_refusal(done, "U9", True, "U1"))
