"""/metrics: a scripted approval moves the counts an operator alerts on."""

from __future__ import annotations

import contextlib

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.adapters.metrics.prometheus import render
from bot.blocks.ids import ActionId
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import APPROVER, BotUnderTest


def samples(page: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, for every sample on the page."""
    out = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(
    page: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return page.get((name, tuple(sorted(labels.items()))), 0.0)


def total(
    page: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    """The sum over every sample of `name` whose labels include `labels`."""
    return sum(v for (n, have), v in page.items() if n == name and set(labels.items()) <= set(have))


def test_a_scripted_approval_moves_the_counts(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot: BotUnderTest = make_bot()
    before = samples(bot.scrape())
    request_id = submitted(bot)
    pending = samples(bot.scrape())
    assert value(pending, "gpu_bot_requests", state="pending_approval") == 1
    assert value(pending, "gpu_bot_store_up") == 1
    reply, _ = bot.approve(request_id, APPROVER)
    assert reply.status == 200
    bot.wait()
    after = samples(bot.scrape())

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("gpu_bot_approvals_total") == 1
    assert moved("gpu_bot_rejections_total") == 0
    assert moved("gpu_bot_purchases_total", kind="capacity-block", account="default") == 1
    assert moved("gpu_bot_purchase_spend_usd_total", kind="capacity-block") == pytest.approx(
        4983.55
    )
    assert moved("gpu_bot_request_transitions_total", state="approved") == 1
    assert value(after, "gpu_bot_requests", state="pending_approval") == 0
    assert value(after, "gpu_bot_requests", state="payment_pending") == 1
    assert moved("gpu_bot_jobs_total", kind="quote", outcome="ok") == 1
    assert moved("gpu_bot_jobs_total", kind="purchase", outcome="ok") == 1
    # Slack calls: the card posted and updated, views opened, response_url answers.
    assert (
        moved("gpu_bot_external_call_seconds_count", service="slack", operation="chat.postMessage")
        >= 1
    )
    assert (
        moved("gpu_bot_external_call_seconds_count", service="slack", operation="chat.update") >= 1
    )
    assert (
        moved("gpu_bot_external_call_seconds_count", service="slack", operation="response_url") >= 1
    )
    # AWS calls, answered by the sandbox market on the real boto3 clients: a DryRun
    # first (EC2 answers it with an error code that means yes), then the purchase.
    purchase = {"service": "aws.ec2", "operation": "PurchaseCapacityBlock"}
    assert moved("gpu_bot_external_call_seconds_count", **purchase) == 2
    assert moved("gpu_bot_external_call_errors_total", **purchase) == 0
    assert value(after, "gpu_bot_after_ack_tasks") == 0
    assert value(after, "gpu_bot_jobs_due") == 0


def test_slack_errors_are_counted_by_method_and_code(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_slack_flow import quoted

    bot: BotUnderTest = make_bot()
    bot.expect_crashes()
    request_id = quoted(bot)
    before = samples(bot.scrape())
    bot.fake.fail("views.open", status=500, times=5)  # past the client's two retries
    bot.click(ActionId.SUBMIT_OPEN.value, request_id, "U0REQUESTER")
    bot.wait()
    after = samples(bot.scrape())
    key = {"service": "slack", "operation": "views.open", "error": "internal_error"}
    assert (
        total(after, "gpu_bot_external_call_errors_total", **key)
        - total(before, "gpu_bot_external_call_errors_total", **key)
        == 1
    )


def test_aws_errors_are_counted_by_operation_and_code() -> None:
    import boto3
    from botocore.stub import Stubber

    from bot.adapters.aws.counting import count_calls

    ec2 = boto3.session.Session(
        aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
    ).client("ec2")
    count_calls(ec2)
    count_calls(ec2)  # counted once however often asked
    key = {"service": "aws.ec2", "operation": "DescribeCapacityBlockOfferings"}
    before = samples(render()[0].decode())
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "describe_capacity_block_offerings", service_error_code="RequestLimitExceeded"
        )
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []})
        for _ in range(2):
            with contextlib.suppress(ec2.exceptions.ClientError):
                ec2.describe_capacity_block_offerings(InstanceCount=1, CapacityDurationHours=24)
    after = samples(render()[0].decode())
    errors = {**key, "error": "RequestLimitExceeded"}
    assert (
        total(after, "gpu_bot_external_call_errors_total", **errors)
        - total(before, "gpu_bot_external_call_errors_total", **errors)
        == 1
    )
    assert (
        total(after, "gpu_bot_external_call_seconds_count", **key)
        - total(before, "gpu_bot_external_call_seconds_count", **key)
        == 2
    )
