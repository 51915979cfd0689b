"""Endpoints on a request's training plan, through real boto3 clients on the sandbox (kept
in the test's Redis namespace): each request validated by botocore against the SageMaker
model, each refusal before any change in AWS, one progress message, a deploy killed half
way that resumes without a second endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.domain.deployment import Rule
from bot.domain.deployment.record import TAG_DEPLOYMENT, DeployState
from bot.domain.lifecycle import State
from bot.domain.mig.planner import ModelNeed
from bot.domain.purchase import TAG_REQUEST
from bot.services.deploying import DeployOrder, DeployRefused
from tests.integration.test_purchasing import approve
from tests.integration.test_slack_flow import submitted
from tests.slack_harness import REQUESTER, BotUnderTest

# Inference on SageMaker: a training plan whose TargetResources is "endpoint".
INFERENCE = '1x p4d.24xlarge 2d from 2026-12-14 sagemaker inference reason="launch"'
TRAINING = '1x p4d.24xlarge 2d from 2026-12-14 sagemaker training reason="fine-tune"'
MUTATING = ("CreateEndpointConfig", "CreateEndpoint", "CreateInferenceComponent")
THREE = (
    ModelNeed("llama-3-8b", 18, 2),
    ModelNeed("mistral-7b", 16, 1),
    ModelNeed("bge-embed", 4, 3),
)


def active_plan(bot: BotUnderTest, text: str = INFERENCE) -> str:
    request_id = submitted(bot, text, pick="training-plan:0")
    approve(bot, request_id)
    record = bot.record(request_id)
    assert record.reservation is not None, record.failure
    bot.clock.set(record.reservation.start + timedelta(minutes=30))
    bot.wait()
    assert bot.record(request_id).state is State.ACTIVE
    return request_id


def sagemaker(bot: BotUnderTest) -> Any:
    return bot.services.accounts.clients(None, "us-east-1").sagemaker


@pytest.fixture
def calls(make_bot) -> Iterator[tuple[BotUnderTest, list[str]]]:  # type: ignore[no-untyped-def]
    """A bot and every SageMaker operation its clients send, in order (recorded when
    botocore builds the request, before the sandbox answers)."""
    bot = make_bot()
    seen: list[str] = []

    def record(model: Any, **_: Any) -> None:
        seen.append(model.name)

    sagemaker(bot).meta.events.register("before-parameter-build.sagemaker", _named(record))
    return bot, seen


def _named(record: Any) -> Any:
    def handler(params: Any, model: Any, **kw: Any) -> None:
        record(model)

    return handler


def run_until(bot: BotUnderTest, deployment_id: str, state: DeployState) -> Any:
    for _ in range(40):
        bot.wait()
        d = bot.services.deploys.get(deployment_id)
        assert d is not None
        if d.state is state or d.state.final:
            return d
        bot.clock.advance(timedelta(minutes=1))
    raise AssertionError(f"{deployment_id} never reached {state}: {d.state}")


def test_three_models_on_mig_partitions_come_up_in_one_message(calls) -> None:  # type: ignore[no-untyped-def]
    bot, seen = calls
    request_id = active_plan(bot)
    record = bot.record(request_id)
    posts_before = len(bot.fake.of("chat.postMessage"))
    d = bot.services.deploys.start(REQUESTER, DeployOrder(request_id, THREE))
    assert d.state is DeployState.QUEUED and not any(op in seen for op in MUTATING)
    done = run_until(bot, d.id, DeployState.IN_SERVICE)
    assert done.state is DeployState.IN_SERVICE, done.failure
    assert [op for op in seen if op in MUTATING] == [
        "CreateEndpointConfig",
        "CreateEndpoint",
        "CreateInferenceComponent",
        "CreateInferenceComponent",
        "CreateInferenceComponent",
    ]
    sm = sagemaker(bot)
    config = sm.describe_endpoint_config(EndpointConfigName=done.config_name)
    (variant,) = config["ProductionVariants"]
    assert variant["CapacityReservationConfig"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "MlReservationArn": record.reservation.id,  # type: ignore[union-attr]
    }
    assert variant["InstanceType"] == "ml.p4d.24xlarge"
    assert len(variant["AcceleratorPartitionLayouts"]) == 1
    components = sm.list_inference_components(EndpointNameEquals=done.endpoint_name)
    assert len(components["InferenceComponents"]) == 3
    for c in components["InferenceComponents"]:
        tags = {
            t["Key"]: t["Value"]
            for t in sm.list_tags(ResourceArn=c["InferenceComponentArn"])["Tags"]
        }
        assert tags[TAG_REQUEST] == request_id and tags[TAG_DEPLOYMENT] == done.id
    # One message, posted once, then updated in place.
    posts = bot.fake.of("chat.postMessage")[posts_before:]
    progress = [p for p in posts if "Deployment" in str(p.args.get("text", ""))]
    assert len(progress) == 1
    updates = [u for u in bot.fake.of("chat.update") if u.args.get("ts") == done.message.ts]
    texts = [str(u.text_of_blocks()) for u in updates]
    assert any("Creating" in t for t in texts)
    assert "in service" in texts[-1] and "InService" in texts[-1]
    assert "Cost per model" in texts[-1]
    # The cost per model is recorded, and the idle share with it.
    assert {c.model for c in done.costs} >= {m.name for m in THREE}
    assert sum(c.share for c in done.costs) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    ("order", "rule"),
    [
        ({"instance_type": "p5.48xlarge"}, Rule.INSTANCE_TYPE_DIFFERS),
        ({"instance_count": 2}, Rule.MORE_INSTANCES_THAN_PLAN),
        ({"layout": ("7g.40gb", "1g.5gb")}, Rule.LAYOUT_REJECTED),
        ({"models": (ModelNeed("llama-3-8b", 4, 57),)}, Rule.MORE_COPIES_THAN_PARTITIONS),
        (
            {"models": (ModelNeed("llama-3-8b", 60, 1),), "layout": ("4g.20gb", "3g.20gb")},
            Rule.WHOLE_GPU_ON_PARTITIONED,
        ),
    ],
)
def test_each_refusal_comes_before_any_change_in_aws(
    calls, order: dict[str, Any], rule: Rule
) -> None:  # type: ignore[no-untyped-def]
    bot, seen = calls
    request_id = active_plan(bot)
    fields: dict[str, Any] = {"models": THREE} | order
    with pytest.raises(DeployRefused) as refused:
        bot.services.deploys.start(REQUESTER, DeployOrder(request_id, **fields))
    assert rule in {r.rule for r in refused.value.refusals}, refused.value.refusals
    assert not any(op in seen for op in MUTATING)


def test_a_plan_not_yet_active_and_a_plan_for_training_are_refused(calls) -> None:  # type: ignore[no-untyped-def]
    bot, seen = calls
    scheduled = submitted(bot, INFERENCE, pick="training-plan:0")
    approve(bot, scheduled)
    with pytest.raises(DeployRefused) as refused:
        bot.services.deploys.start(REQUESTER, DeployOrder(scheduled, THREE))
    assert Rule.PLAN_NOT_ACTIVE in {r.rule for r in refused.value.refusals}
    training = active_plan(bot, TRAINING)
    with pytest.raises(DeployRefused) as refused:
        bot.services.deploys.start(REQUESTER, DeployOrder(training, THREE))
    assert Rule.PLAN_NOT_FOR_ENDPOINTS in {r.rule for r in refused.value.refusals}
    assert not any(op in seen for op in MUTATING)


def test_an_endpoint_name_taken_is_refused(calls) -> None:  # type: ignore[no-untyped-def]
    bot, seen = calls
    request_id = active_plan(bot)
    plan = bot.record(request_id).reservation
    bot.market.leftovers.place_endpoint("us-east-1", "taken-ep", plan.id, "p4d.24xlarge")
    with pytest.raises(DeployRefused) as refused:
        bot.services.deploys.start(
            REQUESTER, DeployOrder(request_id, THREE, endpoint_name="taken-ep")
        )
    assert Rule.ENDPOINT_NAME_TAKEN in {r.rule for r in refused.value.refusals}
    # An endpoint configuration of that name is taken as well (place_endpoint made one).
    with pytest.raises(DeployRefused) as refused:
        bot.services.deploys.start(
            REQUESTER, DeployOrder(request_id, THREE, endpoint_name="taken-ep-config")
        )
    assert Rule.ENDPOINT_NAME_TAKEN in {r.rule for r in refused.value.refusals}
    assert not any(op in seen for op in MUTATING)


def test_someone_else_cannot_deploy_onto_the_plan(calls) -> None:  # type: ignore[no-untyped-def]
    bot, _ = calls
    request_id = active_plan(bot)
    with pytest.raises(DeployRefused, match="Only the requester"):
        bot.services.deploys.start("U0SOMEONE", DeployOrder(request_id, THREE))


def test_a_failed_endpoint_says_awss_reason(calls) -> None:  # type: ignore[no-untyped-def]
    """mig-1g.10gb needs a newer image on P4d. The plan asks for it (InferenceAmiVersion);
    a config without it is accepted and its endpoint fails while provisioning, with a
    reason that does not name the profile, as the source article saw."""
    bot, _ = calls
    request_id = active_plan(bot)
    layout = ("3g.20gb", "2g.10gb", "1g.10gb")
    d = bot.services.deploys.start(REQUESTER, DeployOrder(request_id, THREE, layout=layout))
    (variant,) = d.config_params["ProductionVariants"]
    assert variant["InferenceAmiVersion"]
    store = bot.services.deploys.deployments
    stripped = {k: v for k, v in variant.items() if k != "InferenceAmiVersion"}
    params = d.config_params | {"ProductionVariants": [stripped]}
    store.save_deployment(d, d.model_copy(update={"config_params": params}))
    done = run_until(bot, d.id, DeployState.FAILED)
    assert done.state is DeployState.FAILED
    assert "Unable to configure GPU partitions" in (done.failure or "")
    text = str(bot.fake.of("chat.update")[-1].text_of_blocks())
    assert "failed" in text and "Unable to configure GPU partitions" in text
    assert not sagemaker(bot).list_inference_components()["InferenceComponents"]


# --- a deploy killed half way ------------------------------------------------------------

KILLED = """
import os, sys
from datetime import datetime
from bot.adapters.clock import ManualClock
from bot.adapters.store import RedisStore
from bot.adapters.store.connect import open_redis
from bot.app import build_services
from bot.config import Settings

url, namespace, now, deployment_id = sys.argv[1:5]
store = RedisStore(open_redis(url), namespace=namespace)
settings = Settings(slack_api_url="http://127.0.0.1:9")  # Slack is not reached
services = build_services(settings, clock=ManualClock(datetime.fromisoformat(now)), store=store)
sm = services.accounts.clients(None, "us-east-1").sagemaker
# Killed the hard way right after AWS accepted the endpoint, before anything is written.
def after(parsed, **kw):
    os._exit(9)
sm.meta.events.register("after-call.sagemaker.CreateEndpoint", after)
d = services.deploys.get(deployment_id)
services.deploys._step(d)
"""


def test_a_deploy_killed_half_way_resumes_without_a_second_endpoint(calls, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    bot, seen = calls
    request_id = active_plan(bot)
    d = bot.services.deploys.start(REQUESTER, DeployOrder(request_id, THREE))
    namespace = bot.services.store.prefix.strip("{}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_BOT_", "SLACK_"))}
    done = subprocess.run(
        [sys.executable, "-c", KILLED, redis_url, namespace, bot.clock.now().isoformat(), d.id],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 9, done.stderr
    # The record never heard of the endpoint; AWS has it.
    assert bot.services.deploys.get(d.id).endpoint_status is None  # type: ignore[union-attr]
    sm = sagemaker(bot)
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [d.endpoint_name]
    finished = run_until(bot, d.id, DeployState.IN_SERVICE)
    assert finished.state is DeployState.IN_SERVICE, finished.failure
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == [d.endpoint_name]
    assert "CreateEndpoint" not in seen  # this process never had to create it
    assert seen.count("CreateEndpointConfig") == 0
