"""Cleanup counts a SageMaker resource as gone only when SageMaker says it does not exist:
a ValidationException that says it cannot be deleted yet leaves it for the next look."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from aws_sandbox import SandboxMarket
from bot.adapters.aws.aftercare import AwsAftercare, gone
from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.sandboxed import sandbox_clients
from bot.adapters.clock import ManualClock
from bot.domain.catalog import default_catalog
from bot.domain.cleanup import Leftover, LeftoverKind
from tests.factories import make_record
from tests.unit.sandbox.test_hosting import buy_plan, component, config, variant

REGION = "us-east-1"


class _OneAccount:
    def __init__(self, clients: AwsClients) -> None:
        self._clients = clients

    def clients(self, account: str | None, region: str) -> AwsClients:
        return self._clients


@pytest.fixture
def aws(market: SandboxMarket) -> AwsClients:
    return sandbox_clients(market, REGION)


def _endpoint_with_a_component(aws: AwsClients, clock: ManualClock) -> None:
    sm = aws.sagemaker
    arn = buy_plan(sm, clock)
    config(sm, "ep", variant(arn))
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
    clock.advance(timedelta(minutes=7))
    component(sm, "ic", "ep", None, 1)


def _refusal(call: Any, **params: Any) -> ClientError:
    with pytest.raises(ClientError) as info:
        call(**params)
    return info.value


def test_only_a_refusal_that_says_the_resource_does_not_exist_is_gone(
    aws: AwsClients, clock: ManualClock
) -> None:
    _endpoint_with_a_component(aws, clock)
    in_use = _refusal(aws.sagemaker.delete_endpoint, EndpointName="ep")
    missing = _refusal(aws.sagemaker.delete_endpoint, EndpointName="never-made")
    assert in_use.response["Error"]["Code"] == "ValidationException"
    assert missing.response["Error"]["Code"] == "ValidationException"
    assert not gone(in_use)
    assert gone(missing)


def test_an_endpoint_that_cannot_be_deleted_yet_is_left_for_the_next_look(
    aws: AwsClients, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    _endpoint_with_a_component(aws, clock)
    aftercare = AwsAftercare(_OneAccount(aws), default_catalog(), clock)  # type: ignore[arg-type]
    record = make_record("R1")
    endpoint = Leftover(LeftoverKind.ENDPOINT, "ep", REGION)
    with caplog.at_level(logging.INFO, logger="bot.adapters.aws.aftercare"):
        aftercare.delete(record, [endpoint])
    assert "not deleted yet, looked at again later" in caplog.text
    assert "already gone" not in caplog.text
    assert aws.sagemaker.describe_endpoint(EndpointName="ep")["EndpointName"] == "ep"

    caplog.clear()
    aws.sagemaker.delete_inference_component(InferenceComponentName="ic")
    aftercare.delete(record, [endpoint])  # the next pass deletes it
    with caplog.at_level(logging.INFO, logger="bot.adapters.aws.aftercare"):
        aftercare.delete(record, [endpoint])  # still being deleted: not gone yet
        assert "already gone" not in caplog.text
        clock.advance(timedelta(minutes=10))
        aftercare.delete(record, [endpoint])
    assert "already gone" in caplog.text
