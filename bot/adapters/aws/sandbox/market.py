"""The sandbox capacity market: the state and rules behind the simulated AWS calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from bot.adapters.aws.sandbox.block_offerings import BlockOfferings
from bot.adapters.aws.sandbox.capacity_blocks import KIND as CAPACITY_BLOCK
from bot.adapters.aws.sandbox.capacity_blocks import CapacityBlocks
from bot.adapters.aws.sandbox.capacity_reservations import CapacityReservations
from bot.adapters.aws.sandbox.conditions import MarketConditions, PurchaseFailure
from bot.adapters.aws.sandbox.errors import SandboxError
from bot.adapters.aws.sandbox.extensions import Extensions
from bot.adapters.aws.sandbox.hosting import DEMO_MODELS, Hosting, HostingTimes
from bot.adapters.aws.sandbox.instance_types import InstanceTypeOfferings
from bot.adapters.aws.sandbox.leftovers import Leftovers
from bot.adapters.aws.sandbox.parts import MarketParts
from bot.adapters.aws.sandbox.plan_offerings import PlanOfferings
from bot.adapters.aws.sandbox.price_list import PriceList
from bot.adapters.aws.sandbox.spot_prices import SpotPrices
from bot.adapters.aws.sandbox.store import InMemoryMarketStore, MarketStore
from bot.adapters.aws.sandbox.training_plans import KIND as TRAINING_PLAN
from bot.adapters.aws.sandbox.training_plans import TrainingPlans
from bot.adapters.aws.sandbox.zones import DEFAULT_ZONES
from bot.domain.catalog import Catalog, default_catalog
from bot.services.ports import Clock

Answer = Callable[[Mapping[str, Any], str], dict[str, Any]]

SANDBOX_ACCOUNT_ID = "123456789012"
# The calls that spend money; the market counts them (dry runs aside) in its store.
PURCHASE_OPERATIONS = frozenset(
    {"PurchaseCapacityBlock", "CreateTrainingPlan", "CreateCapacityReservation"}
)
PURCHASE_CALLS = "purchase-calls"


class SandboxMarket:
    """Answers the capacity and price calls for one simulated AWS account.

    `handle` takes the parameters botocore has already validated against the real model
    and returns the response dict, or raises `SandboxError` with AWS's code and message.
    Purchases live in `store`; their states follow from `clock`.
    """

    def __init__(
        self,
        clock: Clock,
        catalog: Catalog | None = None,
        zones: Mapping[str, tuple[str, ...]] = DEFAULT_ZONES,
        *,
        store: MarketStore | None = None,
        conditions: MarketConditions | None = None,
        payment_delay: timedelta = timedelta(minutes=2),
        account_id: str = SANDBOX_ACCOUNT_ID,
        sleep: Callable[[float], None] = time.sleep,
        hosting_times: HostingTimes | None = None,
        models: Sequence[str] = DEMO_MODELS,
    ) -> None:
        self.conditions = conditions or MarketConditions()
        parts = MarketParts(
            clock=clock,
            catalog=catalog or default_catalog(),
            zones=zones,
            store=store or InMemoryMarketStore(),
            conditions=self.conditions,
            payment_delay=payment_delay,
            account_id=account_id,
        )
        block_offerings, blocks = BlockOfferings(parts), CapacityBlocks(parts)
        plan_offerings, plans = PlanOfferings(parts), TrainingPlans(parts)
        spot, price_list = SpotPrices(parts), PriceList(parts)
        hosting = Hosting(parts, hosting_times, models)
        hosting_routes = hosting.routes()
        instance_types = InstanceTypeOfferings(parts)
        self.leftovers = leftovers = Leftovers(parts, hosting)
        extensions = Extensions(parts, blocks_kind=CAPACITY_BLOCK, plans_kind=TRAINING_PLAN)
        reservations = CapacityReservations(parts)
        self._sleep = sleep
        self.store = parts.store
        self.account_id = account_id
        self.clock = clock
        self._routes: dict[str, dict[str, Answer]] = {
            "ec2": {
                "DescribeCapacityBlockOfferings": block_offerings.describe,
                "PurchaseCapacityBlock": blocks.purchase,
                "DescribeCapacityBlockExtensionOfferings": extensions.describe_block_offerings,
                "PurchaseCapacityBlockExtension": extensions.purchase_block_extension,
                "DescribeCapacityBlocks": blocks.describe_blocks,
                "DescribeCapacityReservations": blocks.describe_reservations,
                "DescribeSpotPriceHistory": spot.history,
                "DescribeInstanceTypeOfferings": instance_types.describe,
                "DescribeInstances": leftovers.describe_instances,
                "TerminateInstances": leftovers.terminate_instances,
                "CreateCapacityReservation": reservations.create,
                "CancelCapacityReservation": reservations.cancel,
                "DescribeAvailabilityZones": reservations.describe_zones,
            },
            "sagemaker": {
                "SearchTrainingPlanOfferings": _plans_or_extensions(
                    plan_offerings.search, extensions.search_plan_extensions
                ),
                "CreateTrainingPlan": plans.create,
                "ExtendTrainingPlan": extensions.extend_plan,
                "DescribeTrainingPlan": plans.describe,
                "ListTrainingPlans": plans.list_plans,
                **hosting_routes,
                "ListTags": _tags_by_arn(plans.list_tags, hosting_routes["ListTags"]),
            },
            "pricing": {"GetProducts": price_list.get_products},
            "sts": {
                "AssumeRole": self._assume_role,
                "GetCallerIdentity": self._caller_identity,
            },
        }

    def operations(self, service: str) -> tuple[str, ...]:
        """The operations of `service` (botocore's hyphenized service id) the market answers."""
        return tuple(self._routes.get(service, {}))

    def handle(
        self, service: str, operation: str, params: Mapping[str, Any], region: str
    ) -> dict[str, Any]:
        answer = self._routes[service][operation]
        if self.conditions.latency_ms > 0:
            self._sleep(self.conditions.latency_ms / 1000)
        if self.conditions.take_throttle(operation):
            raise _throttled(service, operation)
        if operation in PURCHASE_OPERATIONS:
            dry_run = bool(params.get("DryRun"))
            if not dry_run:
                self.store.bump(PURCHASE_CALLS)
            failure = self.conditions.take_purchase_failure(dry_run)
            if failure is not None:
                raise _purchase_error(service, operation, failure, self.account_id)
        return answer(params, region)

    def purchase_calls(self) -> int:
        """How many purchase calls (not dry runs) reached the market, in any process
        sharing its store."""
        return self.store.count(PURCHASE_CALLS)

    def _assume_role(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        role = str(params["RoleArn"])
        account = role.split(":")[4] if role.count(":") >= 5 else ""
        if not account.isdigit():
            raise SandboxError("ValidationError", f"{role} is not a valid role ARN", 400)
        expires = self.clock.now() + timedelta(seconds=int(params.get("DurationSeconds", 3600)))
        session = str(params["RoleSessionName"])
        return {
            "Credentials": {
                "AccessKeyId": f"ASIA{account}",
                "SecretAccessKey": "sandbox",
                "SessionToken": f"sandbox-{account}",
                "Expiration": expires,
            },
            "AssumedRoleUser": {
                "AssumedRoleId": f"AROASANDBOX:{session}",
                "Arn": f"arn:aws:sts::{account}:assumed-role/{role.rsplit('/', 1)[-1]}/{session}",
            },
        }

    def _caller_identity(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return {
            "UserId": "AIDASANDBOX",
            "Account": self.account_id,
            "Arn": f"arn:aws:iam::{self.account_id}:user/sandbox",
        }


def _plans_or_extensions(plans: Answer, extensions: Answer) -> Answer:
    """SearchTrainingPlanOfferings with a TrainingPlanArn searches extensions of that plan."""

    def search(params: Mapping[str, Any], region: str) -> dict[str, Any]:
        return (extensions if "TrainingPlanArn" in params else plans)(params, region)

    return search


def _throttled(service: str, operation: str) -> SandboxError:
    if operation == "DescribeCapacityBlockOfferings":
        return SandboxError(
            "CapacityBlockDescribeLimitExceeded",
            "You have exceeded the request limit for DescribeCapacityBlockOfferings.",
        )
    if service == "ec2":
        return SandboxError("RequestLimitExceeded", "Request limit exceeded.", 503)
    return SandboxError("ThrottlingException", "Rate exceeded")


def _purchase_error(
    service: str, operation: str, failure: PurchaseFailure, account: str
) -> SandboxError:
    if failure is PurchaseFailure.ACCESS_DENIED:
        action = f"{'ec2' if service == 'ec2' else 'sagemaker'}:{operation}"
        if service == "ec2":
            return SandboxError(
                "UnauthorizedOperation",
                f"You are not authorized to perform this operation. User: "
                f"arn:aws:sts::{account}:assumed-role/gpu-bot/sandbox is not authorized to "
                f"perform: {action} because no identity-based policy allows the {action} "
                "action.",
                403,
            )
        return SandboxError(
            "AccessDeniedException",
            f"User: arn:aws:sts::{account}:assumed-role/gpu-bot/sandbox is not authorized to "
            f"perform: {action} because no identity-based policy allows the {action} action",
            403,
        )
    if failure is PurchaseFailure.INSTANCE_LIMIT:
        if service == "ec2":
            return SandboxError(
                "InstanceLimitExceeded",
                "You have exceeded your Capacity Block instance limit for this Region.",
            )
        return SandboxError(
            "ResourceLimitExceeded", "You have reached the limit of training plan instances."
        )
    if service == "sagemaker":
        return SandboxError(
            "ResourceNotFound", "The training plan offering is no longer available."
        )
    if failure is PurchaseFailure.OFFERING_GONE:
        return SandboxError(
            "InvalidParameterValue", "The Capacity Block offering has expired or was sold."
        )
    return SandboxError(
        "InsufficientInstanceCapacity",
        "There is not enough capacity to fulfill your request. Search for offerings again.",
        500,
    )


def _tags_by_arn(plans: Answer, others: Answer) -> Answer:
    """ListTags answers for training plans and for the hosting resources alike."""

    def answer(params: Mapping[str, Any], region: str) -> dict[str, Any]:
        if ":training-plan/" in str(params.get("ResourceArn", "")):
            return plans(params, region)
        return others(params, region)

    return answer
