"""What a person may deploy and whether the order would work: the deploy form checked
within Slack's 3 seconds, then with AWS's answers, and recorded with its jobs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bot.blocks.ids import FormBlock
from bot.domain.catalog import UnknownInstanceType
from bot.domain.comparison import OptionKind
from bot.domain.deployment import (
    DeploymentAsk,
    DeploymentPlan,
    Refusal,
    ReservedPlan,
    entity_name,
    plan_deployment,
)
from bot.domain.deployment.record import (
    TAG_DEPLOYMENT,
    Deployment,
    deployment_from_plan,
)
from bot.domain.mig import UnknownProfile
from bot.domain.mig.planner import ModelError, ModelNeed
from bot.domain.offering_rules import training_plan_target
from bot.domain.purchase import TAG_NAMESPACE, TAG_REQUEST, TAG_REQUESTER
from bot.domain.records import CapacityRecord, Reservation
from bot.services.deploy_form import FormInput, add, field_errors
from bot.services.deploying.base import DeploymentRecords
from bot.services.deploying.jobs import ACTIVE_STATES, MODELS_KEPT, deploy_job, plan_end_jobs


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


class DeployOrders(DeploymentRecords):
    def plans_of(self, user: str) -> list[CapacityRecord]:
        """The person's active training plans that reserve capacity for endpoints."""
        return [r for r in self.store.for_user(user, 50) if _endpoint_plan(r)]

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

    def check(
        self, user: str, order: DeployOrder, *, deployment_id: str = "", look_up: bool = True
    ) -> DeploymentPlan:
        """The requests the order would send, with every rule it breaks. `look_up`: ask
        AWS for the plan, the models and the names (else the stored facts only, fast
        enough for a form's 3 seconds). Raises DeployRefused for what is not a rule (no
        such request, not theirs, not a training plan)."""
        record, res = self._deployable(user, order.request_id)
        plan = self._looked_up_plan(res) if look_up else self._plan_facts(record)
        try:
            instance = self.catalog.instance(order.instance_type or res.instance_type)
        except UnknownInstanceType as exc:
            raise DeployRefused(str(exc)) from exc
        name = order.endpoint_name or self.default_name(record.id)
        role = None
        taken: frozenset[str] = frozenset()
        taken_configs: frozenset[str] = frozenset()
        if look_up:
            role, taken, taken_configs = self._looked_up_names(res, order, name)
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
        errors = dict(form.errors)
        if not form.request_id or not form.models:
            return None, errors  # nothing to check the rest against
        # The rest is checked too, whatever else was wrong: every error is said at once.
        name_ok = FormBlock.DEPLOY_NAME.value not in errors
        order = DeployOrder(
            form.request_id,
            form.models,
            form.count,
            form.layout,
            form.name if name_ok else None,
            whole_gpus=form.whole_gpus,
        )
        listed = self.store.cache_get(_models_key(order.request_id))
        if listed is not None:
            known = set(listed.split("\n"))
            missing = [m.name for m in order.models if m.name not in known]
            if missing:
                add(
                    errors,
                    FormBlock.DEPLOY_MODELS.value,
                    f"No SageMaker model named {', '.join(missing)}; ListModels has "
                    f"{', '.join(sorted(known))}.",
                )
        try:
            plan = self.check(user, order, look_up=False)
        except DeployRefused as exc:
            add(errors, exc.field, exc.message)
            return None, field_errors((), errors)
        errors = field_errors(plan.errors, errors)
        if errors:
            return None, errors
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

    def _tags(self, record: CapacityRecord, deployment_id: str) -> dict[str, str]:
        return {
            TAG_REQUEST: record.id,
            TAG_DEPLOYMENT: deployment_id,
            TAG_REQUESTER: record.requester,
            TAG_NAMESPACE: self.namespace,
        }

    def _deployable(self, user: str, request_id: str) -> tuple[CapacityRecord, Reservation]:
        """The user's request and its training plan, or DeployRefused saying why not."""
        record = self.store.get(request_id)
        if record is None:
            raise DeployRefused(f"There is no request {request_id}.")
        if user != record.requester:
            raise DeployRefused(f"Only the requester of {record.id} can deploy onto it.")
        res = record.reservation
        if res is None or res.kind is not OptionKind.TRAINING_PLAN:
            raise DeployRefused(
                f"{record.id} has no training plan: endpoints run on reserved capacity only "
                "through a SageMaker training plan."
            )
        return record, res

    def _looked_up_plan(self, res: Reservation) -> ReservedPlan:
        """The training plan as AWS describes it now (its fee from the record if AWS
        gives none)."""
        plan = self.hosting.training_plan(res.account, res.region, res.id)
        if plan is None:
            raise DeployRefused(f"AWS has no training plan {res.id} any more.")
        return replace(plan, fee_usd=plan.fee_usd or res.fee_usd)

    def _looked_up_names(
        self, res: Reservation, order: DeployOrder, name: str
    ) -> tuple[str | None, frozenset[str], frozenset[str]]:
        """The models' execution role, and whether an endpoint and a configuration named
        `name` exist; DeployRefused when a model is not in the account."""
        known = set(self.hosting.models(res.account, res.region))
        missing = [m.name for m in order.models if m.name not in known]
        if missing:
            raise DeployRefused(
                f"No SageMaker model named {', '.join(missing)} in {res.account}/"
                f"{res.region}; ListModels has {', '.join(sorted(known)) or 'none'}."
            )
        role = self.hosting.model_role(res.account, res.region, order.models[0].name)
        taken: frozenset[str] = frozenset()
        taken_configs: frozenset[str] = frozenset()
        if self.hosting.endpoint(res.account, res.region, name) is not None:
            taken = frozenset({name})
        if self.hosting.config(res.account, res.region, name) is not None:
            taken_configs = frozenset({name})
        return role, taken, taken_configs

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


def _endpoint_plan(record: CapacityRecord) -> bool:
    res = record.reservation
    return (
        record.state in ACTIVE_STATES
        and res is not None
        and res.kind is OptionKind.TRAINING_PLAN
        and training_plan_target(record.request.workload) == "endpoint"
    )


def _models_key(request_id: str) -> str:
    return f"deploy-models:{request_id}"
