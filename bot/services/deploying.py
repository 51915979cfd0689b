"""Endpoints on a request's training plan: checked, recorded, then built by one job.

`start` checks everything it can before any change in AWS (the plan as AWS reports it,
the names, the MIG layout, the copies) and records the deployment with its exact requests
and its deploy job in one step. The deploy job never trusts its own memory of what it
sent: each run looks at what AWS holds under the deployment's names, checks each thing is
its own by tag, takes the next step (config, endpoint, components) and gives the job back
while AWS works (RetryLater, no sleeping). A job that dies half way finds what it made and
goes on; SageMaker names are unique, so a second endpoint cannot be made.

Progress is one message, posted once (OnceOnly) and updated in place at each step.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.blocks.deploy import plan_end_message, progress
from bot.blocks.ids import FormBlock
from bot.domain.catalog import Catalog, UnknownInstanceType
from bot.domain.comparison import OptionKind
from bot.domain.deployment import (
    DeploymentAsk,
    DeploymentPlan,
    Refusal,
    ReservedPlan,
    Rule,
    entity_name,
    plan_deployment,
    plan_refusals,
)
from bot.domain.deployment.record import (
    TAG_DEPLOYMENT,
    DeployedComponent,
    Deployment,
    DeployState,
    deployment_from_plan,
)
from bot.domain.lifecycle import State
from bot.domain.mig import UnknownProfile
from bot.domain.mig.planner import ModelError, ModelNeed
from bot.domain.offering_rules import training_plan_target
from bot.domain.purchase import TAG_NAMESPACE, TAG_REQUEST, TAG_REQUESTER
from bot.domain.records import CapacityRecord, SlackMessage
from bot.services.changes import BOT, Change, apply_change
from bot.services.delivery import OnceOnly
from bot.services.deploy_form import FormInput, field_errors
from bot.services.jobs import JobKind, JobRegistry, RetryLater
from bot.services.ports import Clock, Job, Store
from bot.services.ports.deployments import DeploymentConflict, Deployments
from bot.services.ports.hosting import Hosting, HostingError, Resource

log = logging.getLogger(__name__)
POLL = timedelta(seconds=30)  # how often AWS is asked while it creates or deletes
ACTIVE_STATES = frozenset({State.ACTIVE, State.EXPIRING})
CREATING = frozenset({"Creating", "Updating", "SystemUpdating", "Pending"})
_CAS_TRIES = 10
# AWS answers that mean "not now" rather than "no" (throttling, its own faults, no answer).
RETRYABLE = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalServerError",
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
    }
)


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DeploymentJob(_Payload):
    deployment: str


class PlanEndJob(_Payload):
    """Tell the requester and the approvers that a deployment's plan ends (`ended`
    False: soon, at `end`) or has ended under it."""

    deployment: str
    end: datetime
    ended: bool


class RequestCleanedJob(_Payload):
    """A request was cleaned up (nothing tagged for it is left in AWS): its deployments
    that still say they hold an endpoint are looked at again."""

    request: str


DEPLOY = JobKind("deploy", DeploymentJob)
UNDEPLOY = JobKind("undeploy", DeploymentJob)
PLAN_END = JobKind("deploy-plan-end", PlanEndJob)
GONE = JobKind("deploy-gone", RequestCleanedJob)
KINDS = (DEPLOY, UNDEPLOY, PLAN_END, GONE)
# States that say an endpoint stands, whose deploy job is done: when AWS has nothing
# tagged for the deployment any more (the request's cleanup removed it, or someone did),
# the record says so. Deploying and deleting ones are their jobs' to settle.
STANDING = frozenset({DeployState.IN_SERVICE, DeployState.FAILED})
MODELS_KEPT = timedelta(hours=1)  # ListModels as the deploy form was opened
DEFAULT_WARNING = timedelta(hours=24)  # before the plan ends, when no lead is configured
# Deleting in this order never trips over a dependency (components live on the endpoint,
# the endpoint uses the config).
DELETE_ORDER = ("inference-component", "endpoint", "endpoint-config")


def deploy_job(deployment_id: str, due: datetime) -> Job:
    return DEPLOY.job(deployment_id, due, DeploymentJob(deployment=deployment_id))


def plan_end_jobs(deployment_id: str, end: datetime, lead: timedelta, now: datetime) -> list[Job]:
    """The warning before the plan ends (if still ahead) and the report when it has."""
    jobs = [
        PLAN_END.job(
            f"{deployment_id}:ended",
            end,
            PlanEndJob(deployment=deployment_id, end=end, ended=True),
        )
    ]
    if end - lead > now:
        jobs.append(
            PLAN_END.job(
                f"{deployment_id}:before",
                end - lead,
                PlanEndJob(deployment=deployment_id, end=end, ended=False),
            )
        )
    return jobs


def undeploy_job(deployment_id: str, due: datetime) -> Job:
    return UNDEPLOY.job(deployment_id, due, DeploymentJob(deployment=deployment_id))


class DeployRefused(Exception):
    """Nothing was recorded or sent: `refusals` name the rules, or `message` says why."""

    def __init__(
        self,
        message: str,
        refusals: Sequence[Refusal] = (),
        field: str = FormBlock.DEPLOY_PLAN.value,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.refusals = tuple(refusals)
        self.field = field  # the deploy form's field it is about


@dataclass(frozen=True)
class DeployOrder:
    """What the person asks for (the form's fields)."""

    request_id: str
    models: tuple[ModelNeed, ...]
    instance_count: int = 1
    layout: tuple[str, ...] | None = None  # None: the planner picks
    endpoint_name: str | None = None  # None: derived from the request
    instance_type: str | None = None  # None: the plan's
    whole_gpus: bool = False  # no partitions: every copy takes whole GPUs


class DeployService:
    def __init__(
        self,
        store: Store,
        deployments: Deployments,
        hosting: Hosting,
        delivery: OnceOnly,
        catalog: Catalog,
        clock: Clock,
        namespace: str,
        *,
        approval_channel: str,
        warn_before_end: Sequence[timedelta] = (),
    ) -> None:
        self.approval_channel = approval_channel
        self.warn_before = max(warn_before_end, default=DEFAULT_WARNING)
        self.store = store
        self.deployments = deployments
        self.hosting = hosting
        self.delivery = delivery
        self.catalog = catalog
        self.clock = clock
        self.namespace = namespace

    def register(self, jobs: JobRegistry) -> None:
        jobs.register(DEPLOY, lambda job: self.run_deploy(job.deployment))
        jobs.register(UNDEPLOY, lambda job: self.run_undeploy(job.deployment))
        jobs.register(PLAN_END, self.run_plan_end)
        jobs.register(GONE, lambda job: self.settle_request(job.request))

    def jobs_for_change(
        self, old: CapacityRecord | None, new: CapacityRecord
    ) -> tuple[list[Job], list[str]]:
        """Told of every request saved (the store's follower): a request cleaned up means
        its deployments' endpoints are gone too (they carry its tag); a job records it."""
        cleaned = new.state is State.CLEANED_UP and (old is None or old.state is not new.state)
        if not cleaned:
            return [], []
        payload = RequestCleanedJob(request=new.id)
        return [GONE.job(new.id, self.clock.now(), payload)], []

    def settle_request(self, request_id: str) -> None:
        """The `deploy-gone` job: each standing deployment of the request, settled."""
        for d in self.deployments.deployments_of(request_id):
            self._settle_if_gone(d)

    # --- what can be deployed ----------------------------------------------------------

    def plans_of(self, user: str) -> list[CapacityRecord]:
        """The person's active training plans that reserve capacity for endpoints."""
        return [r for r in self.store.for_user(user, 50) if _endpoint_plan(r)]

    def standing_of(self, records: Sequence[CapacityRecord]) -> list[Deployment]:
        """The deployments of these requests that are queued or may hold resources in AWS
        (not refused, not verified gone): what App Home lists under "Your endpoints"."""
        found = [
            d
            for record in records
            if record.reservation is not None
            for d in self.deployments.deployments_of(record.id)
        ]
        return [d for d in found if not d.state.final]

    def models(self, request_id: str) -> list[str]:
        """ListModels in the plan's account; kept a while so the form's submission can
        check the names without calling AWS before its ack."""
        record = self.store.get(request_id)
        if record is None or record.reservation is None:
            return []
        names = self.hosting.models(record.reservation.account, record.reservation.region)
        self.store.cache_put(_models_key(request_id), "\n".join(names), MODELS_KEPT)
        return names

    def default_name(self, request_id: str) -> str:
        number = len(self.deployments.deployments_of(request_id)) + 1
        return entity_name(f"{self.namespace}-{request_id}-ep{number}".lower())

    # --- checking and starting ---------------------------------------------------------

    def check(
        self, user: str, order: DeployOrder, *, deployment_id: str = "", look_up: bool = True
    ) -> DeploymentPlan:
        """The requests the order would send, with every rule it breaks. `look_up`: ask
        AWS for the plan, the models and the names (else the stored facts only, fast
        enough for a form's 3 seconds). Raises DeployRefused for what is not a rule (no
        such request, not theirs, not a training plan)."""
        record = self.store.get(order.request_id)
        if record is None:
            raise DeployRefused(f"There is no request {order.request_id}.")
        if user != record.requester:
            raise DeployRefused(f"Only the requester of {record.id} can deploy onto it.")
        res = record.reservation
        if res is None or res.kind is not OptionKind.TRAINING_PLAN:
            raise DeployRefused(
                f"{record.id} has no training plan: endpoints run on reserved capacity only "
                "through a SageMaker training plan."
            )
        plan = self._plan_facts(record) if not look_up else None
        if look_up:
            plan = self.hosting.training_plan(res.account, res.region, res.id)
            if plan is None:
                raise DeployRefused(f"AWS has no training plan {res.id} any more.")
            plan = replace(plan, fee_usd=plan.fee_usd or res.fee_usd)
        try:
            instance = self.catalog.instance(order.instance_type or res.instance_type)
        except UnknownInstanceType as exc:
            raise DeployRefused(str(exc)) from exc
        name = order.endpoint_name or self.default_name(record.id)
        role = None
        taken: frozenset[str] = frozenset()
        taken_configs: frozenset[str] = frozenset()
        if look_up:
            known = set(self.hosting.models(res.account, res.region))
            missing = [m.name for m in order.models if m.name not in known]
            if missing:
                raise DeployRefused(
                    f"No SageMaker model named {', '.join(missing)} in {res.account}/"
                    f"{res.region}; ListModels has {', '.join(sorted(known)) or 'none'}."
                )
            role = self.hosting.model_role(res.account, res.region, order.models[0].name)
            if self.hosting.endpoint(res.account, res.region, name) is not None:
                taken = frozenset({name})
            if self.hosting.config(res.account, res.region, name) is not None:
                taken_configs = frozenset({name})
        ask = DeploymentAsk(
            endpoint_name=name,
            instance=instance,
            instance_count=order.instance_count,
            models=order.models,
            layout=order.layout,
            whole_gpus=order.whole_gpus,
            plan=plan,
            execution_role_arn=role,
            role_looked_up_later=not look_up,
            tags=self._tags(record, deployment_id or "pending"),
            region=res.region,
        )
        try:
            return plan_deployment(
                ask, self.catalog, taken_endpoints=taken, taken_configs=taken_configs
            )
        except UnknownProfile as exc:
            raise DeployRefused(str(exc), field=FormBlock.DEPLOY_LAYOUT.value) from exc
        except (ModelError, ValueError) as exc:
            raise DeployRefused(str(exc), field=FormBlock.DEPLOY_MODELS.value) from exc

    def check_form(
        self, user: str, values: Mapping[str, str | None]
    ) -> tuple[DeployOrder | None, dict[str, str]]:
        """The deploy form read and checked with what the bot knows (no AWS call, so it
        answers within Slack's 3 seconds): the order, or errors by field."""
        form = FormInput(values)
        if form.errors:
            return None, form.errors
        order = DeployOrder(
            form.request_id,
            form.models,
            form.count,
            form.layout,
            form.name,
            whole_gpus=form.whole_gpus,
        )
        listed = self.store.cache_get(_models_key(order.request_id))
        if listed is not None:
            known = set(listed.split("\n"))
            missing = [m.name for m in order.models if m.name not in known]
            if missing:
                return None, {
                    FormBlock.DEPLOY_MODELS.value: f"No SageMaker model named "
                    f"{', '.join(missing)}; ListModels has {', '.join(sorted(known))}."[:1500]
                }
        try:
            plan = self.check(user, order, look_up=False)
        except DeployRefused as exc:
            return None, {exc.field: exc.message}
        if not plan.valid:
            return None, field_errors(plan.errors)
        return order, {}

    def start(self, user: str, order: DeployOrder) -> Deployment:
        """Check with AWS's answers and record the deployment with its job; DeployRefused
        says why not. Nothing in AWS changes here."""
        deployment_id = self.deployments.next_deployment_id()
        plan = self.check(user, order, deployment_id=deployment_id)
        if not plan.valid:
            raise DeployRefused("The deployment is refused:", plan.errors)
        record = self.store.get(order.request_id)
        assert record is not None and record.reservation is not None
        now = self.clock.now()
        deployment = deployment_from_plan(
            plan,
            deployment_id=deployment_id,
            request_id=record.id,
            requester=user,
            account=record.reservation.account,
            now=now,
        )
        jobs = [deploy_job(deployment_id, now)]
        if deployment.plan_end is not None:
            jobs += plan_end_jobs(deployment_id, deployment.plan_end, self.warn_before, now)
        saved = self.deployments.save_deployment(None, deployment, jobs)
        cost = deployment.reserved_usd_per_hour
        self._audit(
            record.id,
            "deploy-requested",
            user,
            f"{deployment_id}: endpoint {deployment.endpoint_name}, "
            f"{len(deployment.components)} component(s)",
            cost,
        )
        return saved

    # --- the deploy job ----------------------------------------------------------------

    def run_deploy(self, deployment_id: str) -> Deployment | None:
        d = self.deployments.deployment(deployment_id)
        if d is None or d.state not in (DeployState.QUEUED, DeployState.DEPLOYING):
            return d
        d = self._ensure_message(d)
        try:
            d = self._step(d)
        except HostingError as error:
            if error.code in RETRYABLE:
                raise RetryLater(self.clock.now() + POLL, f"AWS: {error}") from error
            # AWS refused a request outright: asking again would be refused again.
            current = self.deployments.deployment(d.id) or d
            d = self._change(current, state=DeployState.FAILED, failure=f"AWS said {error}")
        self._show(d)
        if d.state is DeployState.DEPLOYING:
            raise RetryLater(self.clock.now() + POLL, f"{d.id}: waiting for AWS")
        return d

    def _step(self, d: Deployment) -> Deployment:
        if d.state is DeployState.QUEUED:
            refusals = self._recheck(d)
            if refusals:
                return self._change(d, state=DeployState.REFUSED, failure=_joined(refusals))
        config = self.hosting.config(d.account, d.region, d.config_name)
        if config is not None and not self._ours(d, config):
            return self._taken(d, "endpoint configuration", d.config_name)
        if config is None:
            self.hosting.create(d.account, d.region, "CreateEndpointConfig", d.config_params)
        d = self._change(d, state=DeployState.DEPLOYING, config_exists=True)
        endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
        if endpoint is not None and not self._ours(d, endpoint):
            return self._taken(d, "endpoint", d.endpoint_name)
        if endpoint is None:
            self.hosting.create(d.account, d.region, "CreateEndpoint", d.endpoint_params)
            return self._change(d, endpoint_status="Creating")
        if endpoint.status != "InService":
            failed = endpoint.status in ("Failed", "OutOfService")
            return self._change(
                d,
                endpoint_status=endpoint.status,
                state=DeployState.FAILED if failed else d.state,
                failure=(endpoint.reason or f"the endpoint is {endpoint.status}")
                if failed
                else None,
            )
        d = self._change(d, endpoint_status="InService")
        return self._components(d)

    def _components(self, d: Deployment) -> Deployment:
        found = {c.name: c for c in self.hosting.components(d.account, d.region, d.endpoint_name)}
        components = []
        for c in d.components:
            have = found.get(c.name)
            if have is not None and not self._ours(d, have):
                return self._taken(d, "inference component", c.name)
            if have is None:
                self.hosting.create(d.account, d.region, "CreateInferenceComponent", c.params)
                components.append(c.model_copy(update={"status": "Creating"}))
            else:
                components.append(
                    c.model_copy(update={"status": have.status, "reason": have.reason})
                )
        statuses = {c.status for c in components}
        failed = [c for c in components if c.status == "Failed"]
        if failed:
            why = "; ".join(f"{c.name}: {c.reason or 'no reason given'}" for c in failed)
            return self._change(
                d, components=tuple(components), state=DeployState.FAILED, failure=why
            )
        if statuses == {"InService"}:
            done = self._change(d, components=tuple(components), state=DeployState.IN_SERVICE)
            self._audit(d.request_id, "deployed", BOT, f"{d.id}: {d.endpoint_name} in service")
            return done
        return self._change(d, components=tuple(components))

    def _recheck(self, d: Deployment) -> list[Refusal]:
        """The plan and the name as AWS has them now, just before the first change."""
        plan = self.hosting.training_plan(d.account, d.region, d.plan_arn)
        if plan is None:
            return [Refusal(Rule.PLAN_NOT_ACTIVE, f"AWS has no training plan {d.plan_arn}")]
        instance = self.catalog.instance(d.instance_type)
        refusals = plan_refusals(plan, instance, d.instance_count)
        endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
        if endpoint is not None and not self._ours(d, endpoint):
            refusals.append(_name_taken(d.endpoint_name))
        return refusals

    def _ours(self, d: Deployment, found: Resource) -> bool:
        return found.tags.get(TAG_DEPLOYMENT) == d.id

    def _taken(self, d: Deployment, what: str, name: str) -> Deployment:
        why = f"the {what} name {name} is taken by something this deployment did not make"
        state = DeployState.FAILED if d.config_exists else DeployState.REFUSED
        return self._change(d, state=state, failure=why)

    def _tags(self, record: CapacityRecord, deployment_id: str) -> dict[str, str]:
        return {
            TAG_REQUEST: record.id,
            TAG_DEPLOYMENT: deployment_id,
            TAG_REQUESTER: record.requester,
            TAG_NAMESPACE: self.namespace,
        }

    def _plan_facts(self, record: CapacityRecord) -> ReservedPlan:
        """What the bot knows of the plan without asking AWS."""
        res = record.reservation
        assert res is not None
        return ReservedPlan(
            arn=res.id,
            instance_type=res.instance_type,
            instances=res.instances,
            status="Active" if record.state in ACTIVE_STATES else record.state.label,
            target_resources=(training_plan_target(record.request.workload),),
            start=res.start,
            end=res.end,
            fee_usd=res.fee_usd,
        )

    # --- the record and the message ----------------------------------------------------

    def _change(self, d: Deployment, **update: Any) -> Deployment:
        """Compare-and-set these fields; on a conflict, apply them to the fresh record."""
        current = d
        for _ in range(_CAS_TRIES):
            new = current.model_copy(update={**update, "updated_at": self.clock.now()})
            if new.model_dump(exclude={"updated_at", "version"}) == current.model_dump(
                exclude={"updated_at", "version"}
            ):
                return current
            try:
                saved = self.deployments.save_deployment(current, new)
            except DeploymentConflict:
                fresh = self.deployments.deployment(d.id)
                if fresh is None:
                    raise
                current = fresh
                continue
            if saved.state is not d.state and saved.state in (
                DeployState.FAILED,
                DeployState.REFUSED,
            ):
                self._audit(saved.request_id, f"deploy-{saved.state.value}", BOT,
                            f"{saved.id}: {saved.failure}")  # fmt: skip
            return saved
        raise RetryLater(self.clock.now() + POLL, f"{d.id}: changed by others meanwhile")

    def _ensure_message(self, d: Deployment) -> Deployment:
        if d.message is not None:
            return d
        key = f"deploy:{d.id}"
        message = progress(d)
        posted = self.delivery.send(key, d.requester, message.text, message.blocks)
        if posted is None:  # posted by an earlier run that died before saving it
            record = self.store.delivery(key)
            if record is None or record.ts is None:
                return d
            posted = SlackMessage(channel=record.channel, ts=record.ts)
        return self._change(d, message=posted)

    def _show(self, d: Deployment) -> None:
        if d.message is not None:
            message = progress(d)
            self.delivery.update(d.message, message.text, message.blocks)

    def _audit(
        self, request_id: str, action: str, actor: str, detail: str, usd: float | None = None
    ) -> None:
        """An entry in the request's audit trail (no state change)."""

        def same(record: CapacityRecord) -> Change:
            return Change(record, action, actor, detail, usd=usd)

        apply_change(self.store, request_id, same, self.clock.now)

    # --- cleanup -------------------------------------------------------------------------

    def cleanup(self, deployment_id: str, user: str, is_approver: bool) -> str:
        """Start deleting a deployment (the Clean up button, `/gpu cleanup D3`); what to
        tell the person. The undeploy job deletes and verifies."""
        d = self.deployments.deployment(deployment_id)
        if d is None:
            return f"There is no deployment {deployment_id}."
        if user != d.requester and not is_approver:
            return f"Only {d.id}'s requester or an approver can clean it up."
        if d.state is DeployState.DELETED:
            return f"{d.id} is cleaned up already: nothing tagged for it is left."
        if d.state is DeployState.REFUSED:
            return f"{d.id} was refused before anything was made: nothing to clean up."
        if d.state is DeployState.DELETING:
            return f"{d.id} is being cleaned up; you will see it in its message."
        now = self.clock.now()
        try:
            self.deployments.save_deployment(
                d,
                d.model_copy(update={"state": DeployState.DELETING, "updated_at": now}),
                [undeploy_job(d.id, now)],
            )
        except DeploymentConflict:
            return f"{d.id} changed just now; press again."
        self._audit(d.request_id, "undeploy-requested", user, f"{d.id}: {d.endpoint_name}")
        return (
            f"Cleaning up {d.id}: its inference components, then endpoint `{d.endpoint_name}`, "
            "then its configuration. Its message says when nothing is left."
        )

    def cleanup_request(self, request_id: str, user: str, is_approver: bool) -> list[str]:
        """`/gpu cleanup R3`: every deployment of the request that may hold something."""
        live = [d for d in self.deployments.deployments_of(request_id) if d.state.live]
        if not live:
            return [f"{request_id} has no deployment holding anything in AWS."]
        return [self.cleanup(d.id, user, is_approver) for d in live]

    def run_undeploy(self, deployment_id: str) -> Deployment | None:
        d = self.deployments.deployment(deployment_id)
        if d is None or d.state is not DeployState.DELETING:
            return d
        d = self._ensure_message(d)
        try:
            d = self._delete_step(d)
        except HostingError as error:
            self._show(d)
            raise RetryLater(self.clock.now() + POLL, f"AWS: {error}") from error
        self._show(d)
        if d.state is DeployState.DELETING:
            raise RetryLater(self.clock.now() + POLL, f"{d.id}: waiting for deletions")
        return d

    def _delete_step(self, d: Deployment) -> Deployment:
        """One pass: delete the first kind still there (components, endpoint, config),
        and only when AWS shows nothing tagged for the deployment call it done."""
        region, account = d.region, d.account
        found = self.hosting.components(account, region, d.endpoint_name)
        ours = [c for c in found if self._ours(d, c)]
        components = tuple(
            c.model_copy(update={"status": _status_of(c.name, ours, "Deleted"), "reason": None})
            for c in d.components
        )
        if ours:
            for c in ours:
                if c.status != "Deleting":
                    self.hosting.delete(account, region, "inference-component", c.name)
            return self._change(d, components=_deleting(components, ours))
        endpoint = self.hosting.endpoint(account, region, d.endpoint_name)
        if endpoint is not None and self._ours(d, endpoint):
            if endpoint.status != "Deleting":
                self.hosting.delete(account, region, "endpoint", d.endpoint_name)
            return self._change(d, components=components, endpoint_status="Deleting")
        config = self.hosting.config(account, region, d.config_name)
        if config is not None and self._ours(d, config):
            self.hosting.delete(account, region, "endpoint-config", d.config_name)
        left = self.hosting.tagged(account, region, TAG_DEPLOYMENT, d.id)
        if left:
            # Made by a deploy step that raced the cleanup: delete it on the next pass.
            for kind, name in sorted(left, key=lambda item: DELETE_ORDER.index(item[0])):
                self.hosting.delete(account, region, kind, name)
            return self._change(d, components=components)
        done = self._change(
            d,
            components=components,
            endpoint_status="Deleted",
            config_exists=False,
            state=DeployState.DELETED,
        )
        self._audit(d.request_id, "undeployed", BOT, f"{d.id}: nothing tagged for it is left")
        return done

    # --- the plan ending under the endpoint ----------------------------------------------

    def run_plan_end(self, job: PlanEndJob) -> None:
        """Warn before, and report when, the plan ends under a deployment that may still
        hold an endpoint. An extended plan moves the message to its new end."""
        d = self.deployments.deployment(job.deployment)
        if d is None or not d.state.live:
            return
        now = self.clock.now()
        try:
            plan = self.hosting.training_plan(d.account, d.region, d.plan_arn)
        except HostingError as error:
            raise RetryLater(now + POLL, f"AWS: {error}") from error
        end = plan.end if plan is not None and plan.end is not None else job.end
        due = end if job.ended else end - self.warn_before
        if end > job.end and due > now:
            raise RetryLater(due, f"{d.plan_arn} was extended to {end.isoformat()}")
        if job.ended and now < end:
            raise RetryLater(end, "the plan has not ended yet")
        moment = "ended" if job.ended else "before"
        message = plan_end_message(d, end, ended=job.ended, now=now)
        stamp = int(end.timestamp())
        for channel in (d.requester, self.approval_channel):
            key = f"deploy-plan-end:{d.id}:{moment}:{stamp}:{channel}"
            self.delivery.send(key, channel, message.text, message.blocks)
        self._audit(
            d.request_id,
            f"deploy-plan-{moment}",
            BOT,
            f"{d.id}: plan {'ended' if job.ended else 'ends'} {end.isoformat()} under "
            f"{d.endpoint_name}",
        )

    # --- reading ------------------------------------------------------------------------

    def get(self, deployment_id: str) -> Deployment | None:
        return self.deployments.deployment(deployment_id)

    def of_request(self, request_id: str) -> list[Deployment]:
        return self.deployments.deployments_of(request_id)

    def _settle_if_gone(self, d: Deployment) -> Deployment:
        """A standing deployment with nothing tagged for it left in AWS is recorded as
        cleaned up (its message says so, and App Home stops listing it); else as it is.
        Raises HostingError when AWS does not answer."""
        if d.state not in STANDING:
            return d
        account, region = d.account, d.region
        if self.hosting.tagged(account, region, TAG_DEPLOYMENT, d.id):
            return d
        if self.hosting.endpoint(account, region, d.endpoint_name) is not None:
            return d  # there, but not tagged as ours: not ours to call gone
        gone = tuple(
            c.model_copy(update={"status": "Deleted", "reason": None}) for c in d.components
        )
        done = self._change(
            d,
            components=gone,
            endpoint_status="Deleted",
            config_exists=False,
            state=DeployState.DELETED,
        )
        self._audit(
            d.request_id,
            "undeployed",
            BOT,
            f"{d.id}: nothing tagged for it is left (removed with the request's cleanup or "
            "outside the bot)",
        )
        self._show(done)
        return done

    def status(self, deployment_id: str) -> Deployment | None:
        """The deployment with what AWS says of it now; one whose endpoint is gone from
        AWS is recorded as cleaned up (nothing else is saved)."""
        d = self.deployments.deployment(deployment_id)
        if d is None or not d.state.live:
            return d
        try:
            d = self._settle_if_gone(d)
        except HostingError:
            log.warning("status of %s: AWS did not answer", d.id, exc_info=True)
            return d
        if not d.state.live:
            return d
        try:
            endpoint = self.hosting.endpoint(d.account, d.region, d.endpoint_name)
            found = self.hosting.components(d.account, d.region, d.endpoint_name)
        except HostingError:
            log.warning("status of %s: AWS did not answer", d.id, exc_info=True)
            return d
        by_name = {c.name: c for c in found}
        # Not there yet while deploying; gone (deleted outside the bot) once it was made.
        absent = None if d.state is DeployState.DEPLOYING else "gone"
        return d.model_copy(
            update={
                "endpoint_status": endpoint.status if endpoint else d.endpoint_status and "gone",
                "components": tuple(
                    c.model_copy(
                        update={
                            "status": by_name[c.name].status if c.name in by_name else absent,
                            "reason": by_name[c.name].reason if c.name in by_name else None,
                        }
                    )
                    for c in d.components
                ),
            }
        )


def _endpoint_plan(record: CapacityRecord) -> bool:
    res = record.reservation
    return (
        record.state in ACTIVE_STATES
        and res is not None
        and res.kind is OptionKind.TRAINING_PLAN
        and training_plan_target(record.request.workload) == "endpoint"
    )


def _status_of(name: str, found: Sequence[Resource], missing: str) -> str | None:
    return next((c.status for c in found if c.name == name), missing)


def _deleting(
    components: tuple[DeployedComponent, ...], ours: Sequence[Resource]
) -> tuple[DeployedComponent, ...]:
    names = {c.name for c in ours}
    return tuple(
        c.model_copy(update={"status": "Deleting"}) if c.name in names else c for c in components
    )


def _models_key(request_id: str) -> str:
    return f"deploy-models:{request_id}"


def _name_taken(name: str) -> Refusal:
    return Refusal(
        Rule.ENDPOINT_NAME_TAKEN,
        f"an endpoint named {name} exists already and this deployment did not make it",
    )


def _joined(refusals: Sequence[Refusal]) -> str:
    return "; ".join(str(r) for r in refusals)
