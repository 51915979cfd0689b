"""`/gpu deploy`, the Deploy button and the deploy form, `/gpu cleanup` and the Clean up
button on a deployment. Listeners only: the form is checked by the deploy service before
the ack (errors go back on their fields); anything that calls AWS runs after it."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.deploy import headline, refusal_text, status_blocks
from bot.blocks.deploy_form import DeployFormFill, deploy_form
from bot.blocks.elements import section
from bot.blocks.ids import ActionId, CallbackId
from bot.blocks.text import esc
from bot.blocks.values import DeploymentRef, RequestRef
from bot.domain.visibility import sees_in_full
from bot.services.container import Services
from bot.services.deploying import DeployOrder, DeployRefused
from handlers.context import interaction
from handlers.conversation import Conversation, after_ack

NO_PLAN = (
    "You have no active training plan for endpoints. Reserve one with `/gpu reserve 1x "
    "p4d.24xlarge 2d sagemaker inference`; once it is approved and active, `/gpu deploy` "
    "puts models on it."
)


def register(app: App, services: Services) -> None:
    @app.action(ActionId.DEPLOY_OPEN.value)
    def deploy_open(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, open_deploy_form_from_button, services, client)

    @app.action(ActionId.DEPLOY_CLEANUP.value)
    def deploy_cleanup(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, clean_up_from_button, services)

    @app.view(CallbackId.DEPLOY.value)
    def deploy_submit(ack: Ack, context: BoltContext) -> None:
        handle_deploy_form(services, ack, context)


def open_deploy_form_from_button(talk: Conversation, services: Services, client: WebClient) -> None:
    ref = talk.subject(RequestRef)
    if ref is not None:
        open_deploy_form(talk, services, client, ref.request_id)


def open_deploy_form(
    talk: Conversation, services: Services, client: WebClient, wanted: str | None
) -> None:
    """The deploy form, with `wanted` (a request id) chosen when given."""
    incoming = talk.interaction
    if wanted and services.queries.get(wanted.upper()) is None:
        talk.refuse(f"There is no request {esc(wanted)}: `/gpu list` shows yours.")
        return
    plans = services.deploys.plans_of(incoming.user)
    if not plans:
        talk.say(NO_PLAN)
        return
    chosen = next((r for r in plans if r.id == wanted), None)
    if wanted and chosen is None:
        talk.refuse(
            f"{wanted} is not an active training plan for endpoints of yours. "
            f"Yours: {', '.join(r.id for r in plans)}."
        )
        return
    chosen = chosen or plans[0]
    models = services.deploys.models(chosen.id)
    view = deploy_form(plans, models, incoming.modal_metadata(), DeployFormFill(chosen.id))
    client.views_open(trigger_id=incoming.trigger_id, view=view)


def handle_deploy_form(services: Services, ack: Ack, context: BoltContext) -> None:
    incoming = interaction(context)
    order, errors = services.deploys.check_form(incoming.user, dict(incoming.values))
    if errors or order is None:
        ack(response_action="errors", errors=errors)
        return
    after_ack(ack, context, start_deployment, services, order)


def start_deployment(talk: Conversation, services: Services, order: DeployOrder) -> None:
    try:
        d = services.deploys.start(talk.interaction.user, order)
    except DeployRefused as exc:
        text = f":no_entry: {esc(exc.message)}"
        if exc.refusals:
            text += "\n" + refusal_text(exc.refusals)
        talk.say(text)
        return
    talk.say(
        f":rocket: Deployment {d.id} started: endpoint `{esc(d.endpoint_name)}` on "
        f"{esc(d.request_id)}. Its progress is in one message in your DMs; "
        f"`/gpu status {d.id}` shows it too."
    )


def is_deployment_id(text: str) -> bool:
    return text[:1].upper() == "D" and text[1:].isdigit()


def show_deployment(talk: Conversation, services: Services, deployment_id: str) -> None:
    known = services.deploys.get(deployment_id.upper())
    if known is None:
        talk.show(f"I can't find deployment {esc(deployment_id)}.")
        return
    actor = talk.actor
    record = services.queries.get(known.request_id)
    involved = {known.requester, record.requester if record else known.requester}
    everyone = services.settings.requests_visible == "all"
    if not (actor.user in involved or sees_in_full(known.requester, actor, everyone)):
        text = (
            f"Deployment *{known.id}* of {esc(known.request_id)} is {known.state.label}. Only "
            "its requester and the approvers see its details."
        )
        talk.show(text, [section(text)])
        return
    d = services.deploys.status(known.id) or known
    talk.show(headline(d), status_blocks(d, services.clock.now()))


def clean_up_from_button(talk: Conversation, services: Services) -> None:
    ref = talk.subject(DeploymentRef)
    if ref is not None:
        clean_up(talk, services, ref.deployment_id)


def clean_up(talk: Conversation, services: Services, target: str) -> None:
    """`/gpu cleanup D3` (or R3: each of its deployments), or the Clean up button."""
    wanted = target.strip().upper()
    if is_deployment_id(wanted):
        said = [services.deploys.cleanup(wanted, talk.actor)]
    elif services.queries.get(wanted) is None:
        said = [f"There is no request {wanted}: `/gpu list` shows yours."]
    else:
        said = services.deploys.cleanup_request(wanted, talk.actor)
    talk.say("\n".join(esc(s) for s in said))
