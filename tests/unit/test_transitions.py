"""The request's transitions as pure functions: the new record, the event it was, or
None when it no longer applies, or a refusal that says why."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from bot.domain import events as on
from bot.domain.cleanup import CleanupChoice, CleanupPrompt, PromptStatus
from bot.domain.lifecycle import State
from bot.domain.records import SlackMessage
from bot.domain.transitions import (
    TransitionRefused,
    cancelled,
    card_posted,
    cleanup_answered,
    cleanup_step,
    timed_out,
)
from tests.factories import NOW, make_record

REQUESTER = "U0REQUESTER"


@dataclass(frozen=True)
class Who:
    user: str
    is_approver: bool = False


def test_a_pending_request_times_out_once() -> None:
    step = timed_out(make_record(state=State.PENDING_APPROVAL), NOW)
    assert step is not None
    assert step.record.state is State.TIMED_OUT and isinstance(step.event, on.TimedOut)
    assert timed_out(make_record(state=State.APPROVED), NOW) is None


def test_only_the_requester_cancels_and_only_before_anything_is_bought() -> None:
    step = cancelled(make_record(state=State.QUOTED), REQUESTER, NOW)
    assert step.record.state is State.CANCELLED and step.record.updated_at == NOW
    with pytest.raises(TransitionRefused, match="Only the requester can cancel R1"):
        cancelled(make_record(state=State.QUOTED), "U0OTHER", NOW)
    with pytest.raises(TransitionRefused, match="is approved: only requests that are not"):
        cancelled(make_record(state=State.APPROVED), REQUESTER, NOW)
    with pytest.raises(TransitionRefused, match="is cancelled already"):
        cancelled(make_record(state=State.CANCELLED), REQUESTER, NOW)


def test_the_card_is_remembered_once() -> None:
    first, second = SlackMessage(channel="C1", ts="1.0"), SlackMessage(channel="C1", ts="2.0")
    step = card_posted(make_record(), first)
    assert step is not None and step.record.approval_message == first
    assert card_posted(step.record, second) is None


def test_a_cleanup_step_loses_to_an_answer_given_meanwhile() -> None:
    asked = CleanupPrompt(status=PromptStatus.OPEN)
    record = make_record(state=State.EXPIRED, cleanup=asked)
    later = asked.model_copy(update={"prompts": asked.prompts + 1})
    assert cleanup_step(record, asked, later) is not None
    answered = asked.model_copy(update={"status": PromptStatus.KEPT})
    assert cleanup_step(record, answered, later) is None


@pytest.mark.parametrize(
    ("who", "choice", "refusal"),
    [
        (Who("U0OTHER"), CleanupChoice.CLEAN_UP, "Only the requester of R1 or an approver"),
        (Who("U0APPROVER", True), CleanupChoice.NOT_MINE, "Only the requester of R1"),
    ],
)
def test_the_cleanup_prompt_is_answered_by_its_requester_or_an_approver(
    who: Who, choice: CleanupChoice, refusal: str
) -> None:
    record = make_record(state=State.EXPIRED, cleanup=CleanupPrompt())
    with pytest.raises(TransitionRefused, match=refusal):
        cleanup_answered(record, who, choice, NOW)
    step = cleanup_answered(record, Who(REQUESTER), CleanupChoice.KEEP, NOW)
    assert step.record.cleanup is not None and step.record.cleanup.status is PromptStatus.KEPT
    assert step.record.cleanup.next_at is not None and step.record.cleanup.next_at > NOW
    assert NOW + timedelta(hours=1) <= step.record.cleanup.next_at
    with pytest.raises(TransitionRefused, match="has not ended"):
        cleanup_answered(make_record(state=State.ACTIVE), Who(REQUESTER), CleanupChoice.KEEP, NOW)
