"""The sandbox capacity market: the state and rules behind the simulated AWS calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from aws_sandbox.block_offerings import BlockOfferings
from aws_sandbox.capacity_blocks import KIND as CAPACITY_BLOCK
from aws_sandbox.capacity_blocks import CapacityBlocks
from aws_sandbox.capacity_reservations import KIND as RESERVATION_KIND
from aws_sandbox.capacity_reservations import CapacityReservations
from aws_sandbox.clock import Clock
from aws_sandbox.conditions import MarketConditions, PurchaseFailure
from aws_sandbox.errors import SandboxError
from aws_sandbox.extensions import BLOCK_EXTENSION, PLAN_EXTENSION, Extensions
from aws_sandbox.hosting import DEMO_MODELS, Hosting, HostingTimes
from aws_sandbox.iam_guard import IamGuard
from aws_sandbox.instance_types import InstanceTypeOfferings
from aws_sandbox.instances import Instances
from aws_sandbox.leftovers import Leftovers
from aws_sandbox.parts import MarketParts
from aws_sandbox.plan_offerings import PlanOfferings
from aws_sandbox.price_list import PriceList
from aws_sandbox.resource_tags import resource_tags
from aws_sandbox.spot_prices import SpotPrices
from aws_sandbox.store import InMemoryMarketStore, MarketStore
from aws_sandbox.training_plans import KIND as TRAINING_PLAN
from aws_sandbox.training_plans import TrainingPlans
from aws_sandbox.world import World, default_world
from aws_sandbox.zones import DEFAULT_ZONES

# One operation's answer: (the request's parameters, its region) -> the response.
Route = Callable[[Mapping[str, Any], str], dict[str, Any]]

SANDBOX_ACCOUNT_ID = "123456789012"
# The calls that spend money; the market counts them (dry runs aside) in its store.
PURCHASE_OPERATIONS = frozenset(
    {"PurchaseCapacityBlock", "CreateTrainingPlan", "CreateCapacityReservation"}
)
PURCHASE_CALLS = "purchase-calls"
# The calls that extend what was bought (not dry runs), counted apart.
EXTENSION_OPERATIONS = frozenset({"PurchaseCapacityBlockExtension", "ExtendTrainingPlan"})
EXTENSION_CALLS = "extension-calls"


class SandboxMarket:
    """Answers the capacity and price calls for one simulated AWS account.

    `handle` takes the parameters botocore has already validated against the real model
    and returns the response dict, or raises `SandboxError` with AWS's code and message.
    Purchases live in `store`; their states follow from `clock`.
    """

    def __init__(
        self,
        clock: Clock,
        world: World | None = None,
        zones: Mapping[str, tuple[str, ...]] = DEFAULT_ZONES,
        *,
        store: MarketStore | None = None,
        conditions: MarketConditions | None = None,
        payment_delay: timedelta = timedelta(minutes=2),
        account_id: str = SANDBOX_ACCOUNT_ID,
        sleep: Callable[[float], None] = time.sleep,
        hosting_times: HostingTimes | None = None,
        models: Sequence[str] = DEMO_MODELS,
        iam: IamGuard | None = None,
    ) -> None:
        """`iam`: the IAM policies the caller's principal has; every call they would not
        allow is refused as AWS refuses it (iam_guard.py). None: no IAM at all."""
        self.iam = iam
        self.conditions = conditions or MarketConditions()
        parts = MarketParts(
            clock=clock,
            world=world or default_world(),
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
        plans.in_use = hosting.instances_on_plan
        hosting_routes = hosting.routes()
        instance_types = InstanceTypeOfferings(parts)
        self.instances = instances = Instances(parts, self._reservations_in)
        self.leftovers = Leftovers(instances, hosting)
        extensions = Extensions(parts, blocks_kind=CAPACITY_BLOCK, plans_kind=TRAINING_PLAN)
        reservations = CapacityReservations(parts)
        self._blocks = blocks
        self._sleep = sleep
        self.store = parts.store
        self.account_id = account_id
        self.clock = clock
        self._routes: dict[str, dict[str, Route]] = {
            "ec2": {
                "DescribeCapacityBlockOfferings": block_offerings.describe,
                "PurchaseCapacityBlock": blocks.purchase,
                "DescribeCapacityBlockExtensionOfferings": extensions.describe_block_offerings,
                "PurchaseCapacityBlockExtension": extensions.purchase_block_extension,
                "DescribeCapacityBlockExtensionHistory": extensions.block_extension_history,
                "DescribeCapacityBlocks": blocks.describe_blocks,
                "DescribeCapacityReservations": blocks.describe_reservations,
                "DescribeSpotPriceHistory": spot.history,
                "DescribeInstanceTypeOfferings": instance_types.describe,
                "RunInstances": instances.run,
                "DescribeInstances": instances.describe,
                "TerminateInstances": instances.terminate,
                "CreateTags": instances.create_tags,
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
                "DescribeTrainingPlanExtensionHistory": extensions.plan_extension_history,
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

    def _reservations_in(self, region: str) -> list[dict[str, Any]]:
        """Every capacity reservation of the region, as instances see them."""
        listed = self._blocks.describe_reservations({}, region)["CapacityReservations"]
        return [
            {
                "id": r["CapacityReservationId"],
                "kind": r.get("ReservationType", "default"),
                "type": r["InstanceType"],
                "zone": r["AvailabilityZone"],
                "criteria": r["InstanceMatchCriteria"],
                "active": r["State"] == "active",
                "room": r["AvailableInstanceCount"],
                "end": r.get("EndDate"),
            }
            for r in listed
        ]

    def operations(self, service: str) -> tuple[str, ...]:
        """The operations of `service` (botocore's hyphenized service id) the market answers."""
        return tuple(self._routes.get(service, {}))

    def handle(
        self, service: str, operation: str, params: Mapping[str, Any], region: str
    ) -> dict[str, Any]:
        answer = self._routes[service][operation]
        if self.iam is not None:
            self.iam.authorize(
                service, operation, params, region, self.account_id, self.resource_tags
            )
        if self.conditions.latency_ms > 0:
            self._sleep(self.conditions.latency_ms / 1000)
        hold = self.conditions.held(operation)
        if hold is not None and not params.get("DryRun"):
            hold.wait()
        if self.conditions.take_throttle(operation):
            raise _throttled(service, operation)
        if operation in EXTENSION_OPERATIONS and not params.get("DryRun"):
            self.store.bump(EXTENSION_CALLS)
        if operation in PURCHASE_OPERATIONS:
            dry_run = bool(params.get("DryRun"))
            if not dry_run:
                self.store.bump(PURCHASE_CALLS)
            failure = self.conditions.take_purchase_failure(dry_run)
            if failure is not None:
                raise _purchase_error(service, operation, failure, self.account_id)
        response = answer(params, region)
        sent = self.conditions.as_sent(operation, response)
        assert isinstance(sent, dict)
        return sent

    def resource_tags(self, arn: str) -> dict[str, str] | None:
        return resource_tags(self._routes, arn)

    def purchase_calls(self) -> int:
        """How many purchase calls (not dry runs) reached the market, in any process
        sharing its store."""
        return self.store.count(PURCHASE_CALLS)

    def extension_calls(self) -> int:
        return self.store.count(EXTENSION_CALLS)

    def bought(self) -> dict[str, int]:
        """What the market sold, by kind: Capacity Blocks, training plans, On-Demand
        Capacity Reservations and extensions of blocks and plans (however many calls,
        re-sends included, it took)."""
        kinds = {
            CAPACITY_BLOCK: CAPACITY_BLOCK,
            TRAINING_PLAN: TRAINING_PLAN,
            "on-demand-reservation": RESERVATION_KIND,
            "block-extension": BLOCK_EXTENSION,
            "plan-extension": PLAN_EXTENSION,
        }
        return {name: len(self.store.records(kind)) for name, kind in kinds.items()}

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


def _plans_or_extensions(plans: Route, extensions: Route) -> Route:
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


def _tags_by_arn(plans: Route, others: Route) -> Route:
    """ListTags answers for training plans and for the hosting resources alike."""

    def answer(params: Mapping[str, Any], region: str) -> dict[str, Any]:
        if ":training-plan/" in str(params.get("ResourceArn", "")):
            return plans(params, region)
        return others(params, region)

    return answer
