"""The bot's own check of what it sends (bot/adapters/aws/request_check.py), written
apart from the sandbox's: each refuses what AWS documents, and they agree."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aws_sandbox.shapes import request_violations
from bot.adapters.aws.request_check import request_problems, service_model

PLAN = {
    "TrainingPlanName": "gpu-r1-a1",
    "TrainingPlanOfferingId": "tpo-0123456789abcdef",
    "Tags": [{"Key": "gpu-bot:approvers", "Value": "U0A U0B"}],
}


def plan(**changes: Any) -> dict[str, Any]:
    return PLAN | changes


def test_a_plan_the_bot_sends_passes() -> None:
    assert request_problems("sagemaker", "CreateTrainingPlan", PLAN) == []


def test_a_comma_in_a_sagemaker_tag_value_is_refused_and_letters_of_any_script_are_not() -> None:
    comma = plan(Tags=[{"Key": "gpu-bot:approvers", "Value": "U0A,U0B"}])
    (problem,) = request_problems("sagemaker", "CreateTrainingPlan", comma)
    assert "Tags[1].Value" in problem and "pattern" in problem
    letters = plan(Tags=[{"Key": "team", "Value": "équipe 研究"}])
    assert request_problems("sagemaker", "CreateTrainingPlan", letters) == []


def test_lengths_enums_and_whole_value_patterns() -> None:
    too_long = plan(TrainingPlanName="a" * 65)
    problems = request_problems("sagemaker", "CreateTrainingPlan", too_long)
    assert any("maximum" in p for p in problems)
    trailing = plan(TrainingPlanName="gpu-r1-")  # the pattern must match the whole name
    assert request_problems("sagemaker", "CreateTrainingPlan", trailing) != []
    odcr = {
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "InstanceCount": 1,
        "InstanceMatchCriteria": "everything",
    }
    (problem,) = request_problems("ec2", "CreateCapacityReservation", odcr)
    assert "InstanceMatchCriteria" in problem and "targeted" in problem


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(st.characters(codec="utf-8"), max_size=70),
    value=st.text(st.characters(codec="utf-8"), max_size=260),
)
def test_the_bot_and_the_sandbox_agree_on_names_and_tag_values(name: str, value: str) -> None:
    params = plan(TrainingPlanName=name, Tags=[{"Key": "k", "Value": value}])
    shape = service_model("sagemaker").operation_model("CreateTrainingPlan").input_shape
    ours = request_problems("sagemaker", "CreateTrainingPlan", params)
    theirs = request_violations(shape, params)
    assert bool(ours) == bool(theirs), (ours, theirs)
