"""The deployment's progress message names the accelerators an unpartitioned copy takes."""

from __future__ import annotations

import json

import pytest

from bot.blocks.deploy import progress
from bot.domain.deployment.record import Deployment
from tests.factories import NOW


def deployment(instance_type: str, layout: tuple[str, ...] | None = None) -> Deployment:
    return Deployment(
        id="D1",
        request_id="R1",
        requester="U0REQUESTER",
        account="default",
        region="us-east-1",
        plan_arn="arn:aws:sagemaker:us-east-1:111122223333:training-plan/gpu-bot-r1",
        instance_type=instance_type,
        instance_count=1,
        layout=layout,
        endpoint_name="gpu-bot-d1",
        config_name="gpu-bot-d1",
        config_params={},
        endpoint_params={},
        components=(),
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.mark.parametrize(
    ("instance_type", "said", "not_said"),
    [
        ("ml.trn1.32xlarge", "whole Trainium devices", "GPU"),
        ("ml.p5.48xlarge", "whole GPUs", "Trainium"),
        ("ml.unknown.xlarge", "whole GPUs", "Trainium"),
    ],
)
def test_an_unpartitioned_deployment_names_its_accelerators(
    instance_type: str, said: str, not_said: str
) -> None:
    text = json.dumps(progress(deployment(instance_type)).blocks)
    assert said in text and not_said not in text


def test_a_partitioned_one_names_its_layout_per_gpu() -> None:
    text = json.dumps(progress(deployment("ml.p5.48xlarge", ("3g.40gb", "4g.40gb"))).blocks)
    assert "3g.40gb + 4g.40gb per GPU" in text
