"""Modal inputs as questions: the prompts, what answers mean, the element state sent in
the view_submission, and what Slack's own client would refuse."""

from __future__ import annotations

import pytest

from bot.blocks.ids import FormBlock
from bot.blocks.modals import reserve_form
from bot.domain.request import RequestDraft
from bot.shell.forms import FieldError, FormField
from handlers.context import view_values

TYPES = ["p5.48xlarge", "p4d.24xlarge", "g5.xlarge"]


def fields(draft: RequestDraft | None = None) -> dict[str, FormField]:
    view = reserve_form(draft or RequestDraft(count=2), TYPES, "us-east-1", {})
    return {
        FormField.of(b).block_id: FormField.of(b) for b in view["blocks"] if b["type"] == "input"
    }


def test_every_reserve_form_input_can_be_filled_in() -> None:
    form = fields()
    # The form has its inputs (so the check below is not over nothing) ...
    assert {
        FormBlock.COUNT.value,
        FormBlock.INSTANCE_TYPE.value,
        FormBlock.START_DATE.value,
    } <= set(form)
    # ... and the shell can fill in every one of them.
    assert [name for name, f in form.items() if not f.fillable] == []


def test_untouched_fields_submit_what_slack_would_and_the_listener_reads_it() -> None:
    form = fields(RequestDraft(count=2, instance_type="p4d.24xlarge"))
    values = {f.block_id: {f.action_id: f.initial()} for f in form.values()}
    read = view_values({"state": {"values": values}})
    assert read[FormBlock.COUNT.value] == "2"
    assert read[FormBlock.INSTANCE_TYPE.value] == "p4d.24xlarge"
    assert read[FormBlock.DURATION.value] is None
    assert read[FormBlock.START_DATE.value] is None
    assert read[FormBlock.REGION.value] == "us-east-1"
    assert read[FormBlock.ENVIRONMENT.value] == "any"
    assert read[FormBlock.INTERRUPTIBLE.value] == ""
    # Empty: the quote uses the team's measured utilisation (or 100%).
    assert read[FormBlock.UTILIZATION.value] is None


def test_questions_show_the_kind_of_answer_and_what_enter_keeps() -> None:
    form = fields()
    ask = {k: f.question(f.initial()) for k, f in form.items()}
    assert ask[FormBlock.COUNT.value] == "Instances [2]: "
    assert ask[FormBlock.INSTANCE_TYPE.value] == "Instance type (1-3): "
    assert ask[FormBlock.START_DATE.value] == "Start date (UTC) (YYYY-MM-DD): "
    assert ask[FormBlock.START_TIME.value] == "Start time (UTC) (HH:MM) (optional): "
    assert ask[FormBlock.INTERRUPTIBLE.value] == (
        "Interruptions: The work checkpoints and can restart (Spot is fine)? y/n (optional) [n]: "
    )
    assert form[FormBlock.ENVIRONMENT.value].choices() == [
        "1) EC2 or SageMaker",
        "2) EC2",
        "3) SageMaker",
    ]
    assert form[FormBlock.INTERRUPTIBLE.value].choices() == []


def test_a_select_takes_a_number_a_value_or_the_option_text() -> None:
    env = fields()[FormBlock.ENVIRONMENT.value]
    state = env.initial()
    for answer in ("3", "sagemaker", "SAGEMAKER"):
        assert env.answer(answer, state)["selected_option"]["value"] == "sagemaker"
    with pytest.raises(FieldError, match="Pick 1 to 3"):
        env.answer("4", state)


def test_enter_keeps_and_dash_clears_and_required_fields_must_be_filled() -> None:
    form = fields()
    count, reason = form[FormBlock.COUNT.value], form[FormBlock.REASON.value]
    assert count.answer("", count.initial()) == {"type": "number_input", "value": "2"}
    with pytest.raises(FieldError, match="required"):
        count.answer("-", count.initial())
    date = form[FormBlock.START_DATE.value]
    with pytest.raises(FieldError, match="required"):
        date.answer("", date.initial())
    filled = reason.answer("launch", reason.initial())
    assert reason.answer("-", filled) == {"type": "plain_text_input", "value": None}


def test_what_slacks_client_refuses_is_refused_before_submitting() -> None:
    form = fields()
    count = form[FormBlock.COUNT.value]
    for bad, message in (("0", "from 1 to 1024"), ("2.5", "whole number"), ("two", "whole")):
        with pytest.raises(FieldError, match=message):
            count.answer(bad, count.initial())
    date, time = form[FormBlock.START_DATE.value], form[FormBlock.START_TIME.value]
    for bad in ("2026-02-30", "14/12/2026", "2026-12-1"):
        with pytest.raises(FieldError, match="YYYY-MM-DD"):
            date.answer(bad, date.initial())
    assert date.answer("2026-12-14", date.initial())["selected_date"] == "2026-12-14"
    with pytest.raises(FieldError, match="HH:MM"):
        time.answer("24:00", time.initial())
    assert time.answer("09:30", time.initial())["selected_time"] == "09:30"
    reason = form[FormBlock.REASON.value]
    with pytest.raises(FieldError, match="500 characters"):
        reason.answer("x" * 501, reason.initial())


def test_a_single_checkbox_is_yes_or_no() -> None:
    box = fields()[FormBlock.INTERRUPTIBLE.value]
    ticked = box.answer("y", box.initial())
    assert [o["value"] for o in ticked["selected_options"]] == ["yes"]
    assert box.shown(ticked) == "y"
    assert box.answer("no", ticked)["selected_options"] == []
    with pytest.raises(FieldError, match="y or n"):
        box.answer("maybe", ticked)


def test_several_checkboxes_take_option_numbers() -> None:
    options = [{"text": {"type": "plain_text", "text": t}, "value": t} for t in ("a", "b", "c")]
    block = {
        "type": "input",
        "block_id": "pick",
        "label": {"type": "plain_text", "text": "Pick"},
        "element": {"type": "checkboxes", "action_id": "v", "options": options},
    }
    box = FormField.of(block)
    state = box.answer("3, 1", box.initial())
    assert [o["value"] for o in state["selected_options"]] == ["a", "c"]
    assert box.shown(state) == "a, c"
    with pytest.raises(FieldError, match="1 to 3"):
        box.answer("4", state)
    with pytest.raises(FieldError, match="required"):
        box.answer("-", state)


def test_long_option_lists_are_packed_without_splitting_an_option() -> None:
    many = [f"p{i}.48xlarge" for i in range(30)]
    view = reserve_form(RequestDraft(), many, "us-east-1", {})
    types = next(
        FormField.of(b) for b in view["blocks"] if b.get("block_id") == FormBlock.INSTANCE_TYPE
    )
    lines = types.choices()
    assert 1 < len(lines) < 30
    assert all(len(line) <= 96 for line in lines)
    joined = "   ".join(lines)
    assert all(f"{i + 1}) {name}" in joined for i, name in enumerate(many))


def test_a_comment_starts_at_a_hash_at_the_start_or_after_two_spaces() -> None:
    from bot.shell.terminal import without_comment

    assert without_comment("press 1                # Submit") == "press 1"
    assert without_comment("              # Option: Enter keeps it") == ""  # Enter
    assert without_comment("# a heading") == ""
    assert without_comment("ticket #42 is blocking") == "ticket #42 is blocking"
    assert without_comment('/gpu quote 1x p5.48xlarge 1d reason="a  # b"  # c') == (
        '/gpu quote 1x p5.48xlarge 1d reason="a  # b"'
    )
