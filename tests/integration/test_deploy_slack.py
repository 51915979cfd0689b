"""`/gpu deploy` through the real Bolt app: the form, its checks on the fields, the Deploy
button on an active plan's message, and a submitted form that ends in service."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from bot.blocks.ids import ActionId, CallbackId, FormBlock
from bot.domain.deployment.record import DeployState
from bot.domain.purchase import TAG_REQUEST
from bot.services.deploying import DeployOrder
from tests.integration.test_deploying import INFERENCE, THREE, active_plan, run_until, sagemaker
from tests.slack_harness import APPROVAL_CHANNEL, OUTSIDER, REQUESTER, BotUnderTest
from tests.slack_payloads import select, text_input

MODELS = "llama-3-8b=18gb x2\nmistral-7b=16gb\nbge-embed=4gbx3"


def form(bot: BotUnderTest) -> dict[str, Any]:
    view: dict[str, Any] = bot.fake.of("views.open")[-1].view()
    assert view["callback_id"] == CallbackId.DEPLOY.value
    return view


def submit(
    bot: BotUnderTest,
    request_id: str,
    models: str = MODELS,
    layout: str = "",
    count: str = "1",
    name: str = "",
) -> Any:
    _token, response_url = bot.new_response_url()
    values = {
        FormBlock.DEPLOY_PLAN.value: select(request_id),
        FormBlock.DEPLOY_MODELS.value: text_input(models),
        FormBlock.DEPLOY_COUNT.value: {"type": "number_input", "value": count},
        FormBlock.DEPLOY_LAYOUT.value: text_input(layout),
        FormBlock.DEPLOY_NAME.value: text_input(name),
    }
    meta = json.dumps({"request": "", "response_url": response_url, "opened_from": "command"})
    return bot.submit_view(CallbackId.DEPLOY.value, values, REQUESTER, meta)


def test_gpu_deploy_opens_a_form_with_the_active_plans_and_the_models(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    reply, token = bot.command("deploy")
    bot.wait()
    assert reply.status == 200
    assert "no active training plan" in bot.responses(token)[-1]["text"]
    request_id = active_plan(bot)
    bot.command("deploy")
    bot.wait()
    view = form(bot)
    plan = next(b for b in view["blocks"] if b.get("block_id") == FormBlock.DEPLOY_PLAN.value)
    assert [o["value"] for o in plan["element"]["options"]] == [request_id]
    assert plan["element"]["initial_option"]["value"] == request_id
    assert "llama-3-8b" in json.dumps(view["blocks"])  # from ListModels


def test_the_active_plans_message_has_a_deploy_button_that_opens_the_form(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = active_plan(bot)
    active = [
        c
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == REQUESTER and "is delivered" in str(c.args.get("text"))
    ]
    assert len(active) == 1  # one message says the plan started, with the button
    assert ActionId.DEPLOY_OPEN.value in json.dumps(active[-1].args.get("blocks"))
    bot.click(ActionId.DEPLOY_OPEN.value, request_id, REQUESTER)
    bot.wait()
    assert form(bot)["blocks"]


def test_a_form_the_rules_refuse_says_why_on_the_field_and_starts_nothing(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = active_plan(bot)
    cases = [
        ({"models": "llama-3-8b=4gb x57"}, FormBlock.DEPLOY_MODELS, "57 copies need 4 GB"),
        ({"layout": "7g.40gb 1g.5gb"}, FormBlock.DEPLOY_LAYOUT, "no placement on one A100"),
        ({"layout": "9g.99gb"}, FormBlock.DEPLOY_LAYOUT, "9g.99gb"),
        ({"count": "3"}, FormBlock.DEPLOY_COUNT, "3 instances asked"),
        (
            {"models": "llama-3-8b=60gb", "layout": "4g.20gb 3g.20gb"},
            FormBlock.DEPLOY_MODELS,
            "an endpoint with a partition layout cannot give",
        ),
        ({"models": "llama=lots"}, FormBlock.DEPLOY_MODELS, "cannot read model"),
    ]
    bot.command("deploy")  # the form lists the models: its submission checks the names
    bot.wait()
    cases.append(({"models": "llama-9=18gb"}, FormBlock.DEPLOY_MODELS, "No SageMaker model"))
    for fields, block, said in cases:
        reply = submit(bot, request_id, **fields)
        assert reply.status == 200
        body = json.loads(reply.body)
        assert body["response_action"] == "errors", fields
        assert said in body["errors"].get(block.value, ""), body
        assert not re.search(r"\[[a-z-]+\]", json.dumps(body["errors"])), body  # no rule ids
    bot.wait()
    assert bot.services.deploys.deployments.deployments_of(request_id) == []


def test_every_wrong_field_is_said_at_once(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = active_plan(bot)
    bot.command("deploy")  # the form lists the models: its submission checks the names
    bot.wait()
    reply = submit(
        bot,
        request_id,
        models="llama=lots\nllama-9=18gb\nmistral-7b=16gb",
        layout="7g.40gb 1g.5gb",
        count="3",
        name="-bad-",
    )
    errors = json.loads(reply.body)["errors"]
    models = errors[FormBlock.DEPLOY_MODELS.value]
    assert (
        'cannot read model "llama=lots"' in models and "No SageMaker model named llama-9" in models
    )
    assert "no placement on one A100" in errors[FormBlock.DEPLOY_LAYOUT.value]
    assert "3 instances asked" in errors[FormBlock.DEPLOY_COUNT.value]
    assert "Letters, digits and hyphens" in errors[FormBlock.DEPLOY_NAME.value]
    bot.wait()
    assert bot.services.deploys.deployments.deployments_of(request_id) == []


def test_a_submitted_form_deploys_and_reports_in_one_message(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id = active_plan(bot, INFERENCE)
    reply = submit(bot, request_id)
    assert reply.status == 200 and reply.body == ""
    bot.wait()
    (d,) = bot.services.deploys.deployments.deployments_of(request_id)
    for _ in range(20):
        bot.clock.advance(timedelta(minutes=1))
        bot.wait()
    d = bot.services.deploys.get(d.id)
    assert d.state is DeployState.IN_SERVICE, d.failure
    progress = [
        c
        for c in bot.fake.of("chat.postMessage")
        if f"Deployment {d.id}" in str(c.args.get("text"))
    ]
    assert len(progress) == 1


# --- status and cleanup ------------------------------------------------------------------


def in_service(bot: BotUnderTest) -> tuple[str, Any]:
    request_id = active_plan(bot)
    d = bot.services.deploys.start(REQUESTER, DeployOrder(request_id, THREE))
    done = run_until(bot, d.id, DeployState.IN_SERVICE)
    assert done.state is DeployState.IN_SERVICE, done.failure
    return request_id, done


def test_gpu_status_shows_the_endpoint_its_components_and_the_plans_time_left(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id, d = in_service(bot)
    _, token = bot.command(f"status {d.id}")
    bot.wait()
    shown = json.dumps(bot.responses(token)[-1]["blocks"])
    assert d.endpoint_name in shown and "InService" in shown
    assert all(c.name in shown for c in d.components)
    assert "left" in shown and "Training plan ends" in shown
    _, token = bot.command(f"status {request_id}")
    bot.wait()
    assert f"/gpu status {d.id}" in json.dumps(bot.responses(token)[-1]["blocks"])


def test_cleanup_deletes_components_then_endpoint_then_config_and_leaves_nothing_tagged(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id, d = in_service(bot)
    seen: list[str] = []
    sm = sagemaker(bot)
    sm.meta.events.register(
        "before-parameter-build.sagemaker",
        lambda model, **_: seen.append(model.name) if model.name.startswith("Delete") else None,
    )
    _, token = bot.command(f"cleanup {d.id}", user=OUTSIDER)
    bot.wait()
    assert "Only" in bot.responses(token)[-1]["text"]
    assert bot.services.deploys.get(d.id).state is DeployState.IN_SERVICE
    _, token = bot.command(f"cleanup {d.id}")
    bot.wait()
    assert "Cleaning up" in bot.responses(token)[-1]["text"]
    done = run_until(bot, d.id, DeployState.DELETED)
    assert done.state is DeployState.DELETED
    assert seen == [
        *["DeleteInferenceComponent"] * 3,
        "DeleteEndpoint",
        "DeleteEndpointConfig",
    ]
    hosting = bot.services.deploys.hosting
    assert hosting.tagged("default", "us-east-1", TAG_REQUEST, request_id) == []
    assert sm.list_endpoints()["Endpoints"] == []
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    last = bot.fake.of("chat.update")[-1]
    assert last.args["ts"] == d.message.ts and "cleaned up" in str(last.text_of_blocks())
    # Again: nothing to do, and said so.
    _, token = bot.command(f"cleanup {d.id}")
    bot.wait()
    assert "cleaned up already" in bot.responses(token)[-1]["text"]


def test_the_clean_up_button_on_the_progress_message_cleans_up(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _, d = in_service(bot)
    last = bot.fake.of("chat.update")[-1]
    assert ActionId.DEPLOY_CLEANUP.value in json.dumps(last.args["blocks"])
    bot.click(ActionId.DEPLOY_CLEANUP.value, d.id, REQUESTER)
    done = run_until(bot, d.id, DeployState.DELETED)
    assert done.state is DeployState.DELETED


def test_a_plan_ending_under_a_live_endpoint_is_reported_before_and_when_it_happens(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id, d = in_service(bot)
    end = bot.record(request_id).reservation.end  # type: ignore[union-attr]
    lead = bot.services.deploys.warn_before

    def told(word: str) -> set[str]:
        return {
            c.args["channel"]
            for c in bot.fake.of("chat.postMessage")
            if d.id in str(c.args.get("text")) and word in str(c.args.get("text"))
        }

    bot.clock.set(end - lead - timedelta(minutes=5))
    bot.wait()
    assert told("ends") == set()
    bot.clock.set(end - lead + timedelta(minutes=1))
    bot.wait()
    assert told("ends") == {REQUESTER, APPROVAL_CHANNEL}
    assert told("ended") == set()
    bot.clock.set(end + timedelta(minutes=1))
    bot.wait()
    assert told("ended") == {REQUESTER, APPROVAL_CHANNEL}
    status = sagemaker(bot).describe_endpoint(EndpointName=d.endpoint_name)["EndpointStatus"]
    assert status == "OutOfService"
    bot.clock.advance(timedelta(hours=1))
    bot.wait()  # sent once: a second run of either job posts nothing more
    ended = [c for c in bot.fake.of("chat.postMessage") if "ended" in str(c.args.get("text"))]
    assert len([c for c in ended if d.id in str(c.args.get("text"))]) == 2


def test_a_deployment_cleaned_up_before_the_plan_ends_hears_nothing_of_it(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    request_id, d = in_service(bot)
    bot.services.deploys.cleanup(d.id, bot.actor(REQUESTER))
    run_until(bot, d.id, DeployState.DELETED)
    end = bot.record(request_id).reservation.end  # type: ignore[union-attr]
    bot.clock.set(end + timedelta(minutes=1))
    bot.wait()
    texts = [str(c.args.get("text")) for c in bot.fake.of("chat.postMessage")]
    assert not [t for t in texts if d.id in t and "Training plan" in t]


def test_app_home_lists_the_endpoints_until_they_are_cleaned_up(make_bot) -> None:  # type: ignore[no-untyped-def]
    from tests import slack_payloads as payloads

    bot = make_bot()
    _, d = in_service(bot)

    def home() -> str:
        bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
        bot.wait()
        return json.dumps(bot.fake.of("views.publish")[-1].view())

    shown = home()
    assert "Your endpoints" in shown
    assert f"*{d.id}* endpoint `{d.endpoint_name}`" in shown and "in service" in shown
    assert f"/gpu cleanup {d.id}" in shown
    bot.click(ActionId.DEPLOY_CLEANUP.value, d.id, REQUESTER)
    assert run_until(bot, d.id, DeployState.DELETED).state is DeployState.DELETED
    assert "Your endpoints" not in home()


def test_an_endpoint_gone_with_the_requests_cleanup_shows_as_cleaned_up_everywhere(
    make_bot,
) -> None:  # type: ignore[no-untyped-def]
    from tests import slack_payloads as payloads

    bot = make_bot()
    request_id, d = in_service(bot)
    end = bot.record(request_id).reservation.end  # type: ignore[union-attr]
    bot.clock.set(end + timedelta(minutes=5))  # the plan ended under the endpoint
    bot.wait()
    bot.clock.set(end + timedelta(hours=1))
    bot.wait()
    prompt = [
        c
        for c in bot.fake.of("chat.postMessage")
        if c.args["channel"] == REQUESTER and ActionId.CLEANUP_NOW.value in json.dumps(c.blocks())
    ]
    assert prompt, "the cleanup prompt lists the endpoint left on the ended plan"
    bot.click(ActionId.CLEANUP_NOW.value, request_id, REQUESTER)
    bot.wait()
    for _ in range(10):  # the cleanup deletes, then looks again until nothing is left
        bot.clock.advance(timedelta(minutes=10))
        bot.wait()
    assert bot.record(request_id).state.value == "cleaned_up"
    # Nothing says in service any more, and nothing is billed per hour.
    gone = bot.services.deploys.get(d.id)
    assert gone is not None and gone.state is DeployState.DELETED
    bot.post(*payloads.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"}))
    bot.wait()
    home = json.dumps(bot.fake.of("views.publish")[-1].view())
    assert "Your endpoints" not in home and "in service" not in home
    _, token = bot.command(f"status {d.id}")
    bot.wait()
    shown = json.dumps(bot.responses(token)[-1]["blocks"])
    assert "is cleaned up" in shown and "in service" not in shown
    assert "while it ran" in shown
    _, token = bot.command(f"status {request_id}")
    bot.wait()
    assert f"{d.id}: endpoint `{d.endpoint_name}` cleaned up" in json.dumps(
        bot.responses(token)[-1]["blocks"]
    )
    message = bot.fake.of("chat.update")[-1]
    assert d.message is not None and message.args["ts"] == d.message.ts
    assert "is cleaned up" in str(message.text_of_blocks())


def test_an_endpoint_deleted_outside_the_bot_is_recorded_gone_when_looked_at(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _, d = in_service(bot)
    sm = sagemaker(bot)
    for c in d.components:
        sm.delete_inference_component(InferenceComponentName=c.name)
    for _ in range(5):
        bot.clock.advance(timedelta(minutes=2))
        bot.wait()
    sm.delete_endpoint(EndpointName=d.endpoint_name)
    for _ in range(5):
        bot.clock.advance(timedelta(minutes=2))
        bot.wait()
    sm.delete_endpoint_config(EndpointConfigName=d.config_name)
    _, token = bot.command(f"status {d.id}")
    bot.wait()
    shown = json.dumps(bot.responses(token)[-1]["blocks"])
    assert "is cleaned up" in shown and "in service" not in shown
    assert bot.services.deploys.get(d.id).state is DeployState.DELETED


def test_a_deployments_status_is_shown_in_full_only_to_those_involved(make_bot) -> None:  # type: ignore[no-untyped-def]
    bot = make_bot()
    _, d = in_service(bot)
    _, token = bot.command(f"status {d.id}", user=OUTSIDER)
    bot.wait()
    shown = json.dumps(bot.responses(token)[-1]["blocks"])
    assert f"Deployment *{d.id}*" in shown and "in service" in shown
    assert d.endpoint_name not in shown and "Cost per model" not in shown
