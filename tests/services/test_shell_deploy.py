"""The source article's story in `gpu-bot shell`: reserve inference capacity with a training
plan, approve it, move the clock to its start, deploy three models on MIG partitions, see
the endpoint come up, check its status, clean up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.shell_runner import run_shell_here

START = (datetime.now(UTC) + timedelta(days=14)).strftime("%Y-%m-%d")
STORY = [
    f'/gpu reserve 1x p4d.24xlarge 2d from {START} sagemaker inference reason="launch"',
    "press 1",  # Submit for approval…
    "",  # the recommended option: a training plan for endpoints
    "",
    "as alice",
    "press 1",  # Approve
    "y",
    "as you",
    "clock +15d",  # the plan is active
    "/gpu deploy",
    "",  # the plan
    "llama-3-8b=18gb x2; mistral-7b=16gb; bge-embed=4gbx3",
    "",  # one instance
    "",  # the planner's layout
    "",  # the default name
    "clock +10m",  # config and endpoint created
    "clock +10m",  # endpoint in service, components created
    "clock +5m",  # components in service
    "/gpu status D1",
    "/gpu cleanup D1",
    "clock +2m",
    "clock +3m",
    "clock +3m",
    "/gpu status D1",
]


@pytest.fixture(scope="module")
def story() -> str:
    return run_shell_here("\n".join(STORY) + "\n")


def test_the_active_plan_offers_a_deploy_button_and_the_form_starts_a_deployment(
    story: str,
) -> None:
    assert "[2] Deploy an endpoint" in story
    assert "── modal opened for you: Deploy an endpoint ──" in story
    assert "Deployment D1 started: endpoint `gpu-r1-ep1` on R1" in story


def test_the_endpoint_comes_up_on_mig_partitions_in_one_message(story: str) -> None:
    assert "Deployment D1 of R1: endpoint `gpu-r1-ep1` is in service" in story
    assert "mig-3g.20gb" in story and "bge-embed, 3 copies on mig-1g.5gb: InService" in story
    assert "*Cost per model*" in story
    before_status = story.split("you> /gpu status D1")[0]
    assert before_status.count("is in service") == 1  # updated in place, not posted again


def test_status_and_cleanup_leave_nothing(story: str) -> None:
    status = story.split("you> /gpu status D1")[1]
    assert "Training plan ends" in status and "left" in status
    assert "Endpoint `gpu-r1-ep1`: InService" in status
    final = story.split("you> /gpu status D1")[2]
    assert "is cleaned up" in final
    assert "Endpoint configuration `gpu-r1-ep1`: deleted" in final
