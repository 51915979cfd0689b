"""Buying and following reservations with boto3 (live AWS or the sandbox market).

Implements the `Purchaser` port. Every call runs in the order's account. Reads are retried
by the clients themselves (botocore standard mode, see clients.py); PurchaseCapacityBlock
is sent once. What reaches the service is a decision: refused (AWS answered, nothing was
bought) or unknown (it may have been bought: no answer, a 5xx, or an answer to a re-send).
Every purchase call is checked against the service model (patterns included) before it is
sent, so a tag or name AWS would refuse is caught here, not by a failed purchase.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from botocore import xform_name
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
)

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.market import AwsMarket
from bot.adapters.aws.request_check import request_problems
from bot.adapters.aws.zone_walk import future_dated, reserve_in_a_zone
from bot.domain.catalog import Catalog
from bot.domain.comparison import OptionKind
from bot.domain.market import Offering
from bot.domain.purchase import (
    TAG_NAMESPACE,
    TAG_REQUEST,
    BlockInUse,
    plan_name_prefix,
    plan_names_of,
    zone_client_token,
)
from bot.domain.records import Reservation
from bot.domain.request import CapacityRequest
from bot.services.ports import Clock, Order, PurchaseError, PurchaseProblem

log = logging.getLogger(__name__)

PLATFORM = "Linux/UNIX"
_THROTTLING = {
    "RequestLimitExceeded",
    "Throttling",
    "ThrottlingException",
    "CapacityBlockDescribeLimitExceeded",
}
_ACCESS = {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"}
_CAPACITY = {"InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientCapacityError"}
_LIMIT = {"InstanceLimitExceeded", "ResourceLimitExceeded", "ReservationCapacityExceeded"}
_GONE = {"ResourceNotFound", "InvalidCapacityBlockOfferingId.NotFound"}
_ACTION = re.compile(r"perform:? ([a-z0-9-]+:[A-Za-z]+)")


class AwsPurchaser:
    def __init__(self, accounts: AccountClients, catalog: Catalog, clock: Clock) -> None:
        self._accounts = accounts
        self._catalog = catalog
        self._clock = clock
        self._markets: dict[str, AwsMarket] = {}

    def accounts(self) -> Sequence[str]:
        return self._accounts.names()

    def _clients(self, account: str, region: str) -> AwsClients:
        return self._accounts.clients(account, region)

    # --- the re-check ------------------------------------------------------------------

    def current_offering(
        self, account: str, request: CapacityRequest, approved: Offering
    ) -> Offering | None:
        market = self._markets.get(account)
        if market is None:
            market = AwsMarket(lambda region: self._clients(account, region), self._catalog)
            self._markets[account] = market
        name = "capacity-block" if approved.kind.value == "capacity-block" else "training-plan"
        try:
            offerings: list[Offering] = market.calls(request, self._clock.now())[name]()
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, f"looking up the offering ({name})") from exc
        same_id = [o for o in offerings if o.offering_id == approved.offering_id]
        if same_id:
            return same_id[0]
        # The fee is part of some offering ids: the same capacity at a new price has a new id.
        same_capacity = [
            o
            for o in offerings
            if (o.zone, o.start, o.end, o.count, o.instance_type)
            == (approved.zone, approved.start, approved.end, approved.count, approved.instance_type)
        ]
        return min(same_capacity, key=lambda o: o.upfront_usd) if same_capacity else None

    # --- buying ------------------------------------------------------------------------

    def dry_run(self, order: Order) -> None:
        if order.kind is OptionKind.TRAINING_PLAN:
            return  # CreateTrainingPlan has no DryRun
        try:
            self._call(order, dry_run=True)
        except ClientError as exc:
            if _code(exc) == "DryRunOperation":
                return
            raise purchase_error(exc, "the dry run") from exc
        except BotoCoreError as exc:
            raise purchase_error(exc, "the dry run") from exc

    def buy(self, order: Order) -> Reservation:
        try:
            response = self._call(order, dry_run=False)
        except (ClientError, BotoCoreError) as exc:
            if (
                order.kind is OptionKind.TRAINING_PLAN
                and _code(exc)
                in (
                    "ResourceInUse",
                    "ValidationException",
                )
                and "exist" in str(exc)
            ):
                # The name is the idempotency key: ours already, or someone else's.
                found = self.find(order)
                if found is not None:
                    return found
                raise PurchaseError(
                    PurchaseProblem.NAME_TAKEN,
                    _code(exc),
                    f"a training plan named {order.token} exists and was not bought for this "
                    "request",
                ) from exc
            raise purchase_error(exc, "the purchase", buying=True) from exc
        return self._reservation_from(order, response)

    def _call(self, order: Order, dry_run: bool) -> dict[str, Any]:
        clients = self._clients(order.account, order.region)
        tags = [{"Key": k, "Value": v} for k, v in order.tags.items()]
        if order.kind is OptionKind.CAPACITY_BLOCK:
            # No client token: sent once (ec2_once), never re-sent by the SDK.
            return checked_call(
                clients.ec2_once,
                "ec2",
                "PurchaseCapacityBlock",
                CapacityBlockOfferingId=str(order.offering_id),
                InstancePlatform=PLATFORM,
                TagSpecifications=[
                    {"ResourceType": "capacity-reservation", "Tags": tags},
                    {"ResourceType": "capacity-block", "Tags": tags},
                ],
                DryRun=dry_run,
            )
        if order.kind is OptionKind.TRAINING_PLAN:
            # The name is unique per account: a re-send is answered "exists", never a
            # second plan, so the SDK's retries may stay.
            return checked_call(
                clients.sagemaker,
                "sagemaker",
                "CreateTrainingPlan",
                TrainingPlanName=order.token,
                TrainingPlanOfferingId=str(order.offering_id),
                Tags=tags,
            )
        if order.kind is OptionKind.ON_DEMAND_RESERVATION:
            zones = self._zones(clients, order)
            if dry_run:
                return self._create_reservation(clients, order, zones[0], tags, dry_run=True)
            return reserve_in_a_zone(
                lambda zone: self._create_reservation(clients, order, zone, tags, dry_run=False),
                order,
                zones,
                _CAPACITY,
            )
        raise ValueError(f"nothing to buy for {order.kind.value}")

    def _create_reservation(
        self,
        clients: AwsClients,
        order: Order,
        zone: str,
        tags: list[dict[str, str]],
        dry_run: bool,
    ) -> dict[str, Any]:
        # The client token makes a re-send return the same reservation. Targeted: only
        # instances that name the reservation run in it, so nobody else's matching
        # instance uses up the paid capacity (and cleanup never meets one it owns).
        return checked_call(
            clients.ec2,
            "ec2",
            "CreateCapacityReservation",
            ClientToken=zone_client_token(order.token, order.region, zone),
            InstanceType=order.instance_type,
            InstancePlatform=PLATFORM,
            AvailabilityZone=zone,
            InstanceCount=order.count,
            EndDateType="limited",
            EndDate=order.end,
            InstanceMatchCriteria="targeted",
            TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": tags}],
            DryRun=dry_run,
            **future_dated(order),
        )

    def _zones(self, clients: AwsClients, order: Order) -> list[str]:
        """The Availability Zones (not Local or Wavelength Zones) of the region that sell
        the instance type, by name."""
        try:
            return self._selling_zones(clients, order)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "looking up the zones") from exc

    def _selling_zones(self, clients: AwsClients, order: Order) -> list[str]:
        zones = clients.ec2.describe_availability_zones(
            Filters=[
                {"Name": "state", "Values": ["available"]},
                {"Name": "zone-type", "Values": ["availability-zone"]},
            ]
        )["AvailabilityZones"]
        pages = clients.ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [order.instance_type]}],
        )
        selling = {
            o["Location"]
            for page in pages
            for o in page.get("InstanceTypeOfferings", [])
            if o.get("InstanceType") == order.instance_type
        }
        usable = sorted(
            str(z["ZoneName"])
            for z in zones
            if z.get("ZoneType", "availability-zone") == "availability-zone"
            and z["ZoneName"] in selling
        )
        if not usable:
            raise PurchaseError(
                PurchaseProblem.INSUFFICIENT_CAPACITY,
                "NoZoneSellsType",
                f"no Availability Zone of {order.region} sells {order.instance_type}",
            )
        return usable

    def _reservation_from(self, order: Order, response: dict[str, Any]) -> Reservation:
        if order.kind is OptionKind.TRAINING_PLAN:
            return self._plan(order.account, order.region, str(response["TrainingPlanArn"]))
        raw = response["CapacityReservation"]
        reservation = _ec2_reservation(order.kind, order.account, order.region, raw)
        return reservation.model_copy(update={"fee_usd": order.fee_usd})

    # --- finding and following ---------------------------------------------------------

    def find(self, order: Order) -> Reservation | None:
        clients = self._clients(order.account, order.region)
        try:
            if order.kind is OptionKind.TRAINING_PLAN:
                return self._find_plan(clients, order)
            return self._find_reservation(clients, order)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "looking for an earlier purchase") from exc

    def _find_plan(self, clients: AwsClients, order: Order) -> Reservation | None:
        """Any attempt's plan of this request (its name starts with the request's plan
        names) that carries the request's tag: a plan of that name without it is not ours."""
        start = plan_names_of(order.tags.get(TAG_NAMESPACE, ""), order.tags.get(TAG_REQUEST, ""))
        for page in clients.sagemaker.get_paginator("list_training_plans").paginate():
            for summary in page.get("TrainingPlanSummaries", []):
                if not str(summary["TrainingPlanName"]).startswith(start):
                    continue
                arn = summary["TrainingPlanArn"]
                tags = _tags(clients.sagemaker.list_tags(ResourceArn=arn))
                if tags.get(TAG_REQUEST) == order.tags.get(TAG_REQUEST):
                    return self._plan(order.account, order.region, arn)
        return None

    def _find_reservation(self, clients: AwsClients, order: Order) -> Reservation | None:
        """The reservation carrying this request's tags. DescribeCapacityReservations
        documents no tag filter (only type, state, dates and the like:
        https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html),
        so the answer is narrowed by the documented `instance-type` and read for `Tags`."""
        request_id = order.tags.get(TAG_REQUEST, "")
        paginator = clients.ec2.get_paginator("describe_capacity_reservations")
        for page in paginator.paginate(
            Filters=[{"Name": "instance-type", "Values": [order.instance_type]}]
        ):
            for raw in page.get("CapacityReservations", []):
                tags = _tags(raw)
                if tags.get(TAG_REQUEST) == request_id and tags.get(
                    TAG_NAMESPACE
                ) == order.tags.get(TAG_NAMESPACE):
                    return _ec2_reservation(order.kind, order.account, order.region, raw)
        if order.kind is OptionKind.CAPACITY_BLOCK:
            # DescribeCapacityBlocks documents no tag:KEY filter: match its tags here.
            for block in _all_blocks(clients):
                tags = _tags(block)
                if tags.get(TAG_REQUEST) == request_id and tags.get(
                    TAG_NAMESPACE
                ) == order.tags.get(TAG_NAMESPACE):
                    ids = block.get("CapacityReservationIds") or []
                    if ids:
                        raw = clients.ec2.describe_capacity_reservations(
                            CapacityReservationIds=[ids[0]]
                        )["CapacityReservations"][0]
                        return _ec2_reservation(order.kind, order.account, order.region, raw)
        return None

    def refresh(self, reservation: Reservation) -> Reservation:
        if reservation.kind is OptionKind.TRAINING_PLAN:
            return self._plan(reservation.account, reservation.region, reservation.id)
        clients = self._clients(reservation.account, reservation.region)
        raw = clients.ec2.describe_capacity_reservations(CapacityReservationIds=[reservation.id])[
            "CapacityReservations"
        ][0]
        fresh = _ec2_reservation(reservation.kind, reservation.account, reservation.region, raw)
        return fresh.model_copy(update={"fee_usd": reservation.fee_usd or fresh.fee_usd})

    def _plan(self, account: str, region: str, name_or_arn: str) -> Reservation:
        clients = self._clients(account, region)
        plan = clients.sagemaker.describe_training_plan(TrainingPlanName=name_or_arn)
        parts = plan.get("ReservedCapacitySummaries") or []
        return Reservation(
            kind=OptionKind.TRAINING_PLAN,
            id=plan["TrainingPlanArn"],
            account=account,
            region=region,
            availability_zone=parts[0].get("AvailabilityZone") if parts else None,
            instance_type=(parts[0]["InstanceType"] if parts else "").removeprefix("ml."),
            instances=int(plan.get("TotalInstanceCount", 0)),
            start=_utc(plan["StartTime"]),
            end=_utc(plan["EndTime"]),
            fee_usd=float(plan["UpfrontFee"]) if plan.get("UpfrontFee") else None,
            state=plan["Status"],
            state_reason=plan.get("StatusMessage", "") or "",
        )

    def blocks_in_use(self, regions: Sequence[str]) -> list[BlockInUse]:
        blocks: list[BlockInUse] = []
        for account in self.accounts():
            for region in dict.fromkeys(regions):
                clients = self._clients(account, region)
                for block in _all_blocks(
                    clients, states=["payment-pending", "scheduled", "active"]
                ):
                    ids = block.get("CapacityReservationIds") or []
                    count = 0
                    if ids:
                        raws = clients.ec2.describe_capacity_reservations(
                            CapacityReservationIds=list(ids)
                        )["CapacityReservations"]
                        count = sum(int(r.get("TotalInstanceCount", 0)) for r in raws)
                    blocks.append(
                        BlockInUse(
                            account,
                            block["CapacityBlockId"],
                            count,
                            block["State"],
                            _utc(block["EndDate"]),
                        )
                    )
        return blocks

    def bought(
        self, account: str, regions: Sequence[str], namespace: str
    ) -> list[tuple[str | None, Reservation]]:
        found: list[tuple[str | None, Reservation]] = []
        for region in dict.fromkeys(regions):
            clients = self._clients(account, region)
            # No tag filter is documented for this call: every reservation, read for Tags.
            paginator = clients.ec2.get_paginator("describe_capacity_reservations")
            for page in paginator.paginate():
                for raw in page.get("CapacityReservations", []):
                    if _tags(raw).get(TAG_NAMESPACE) != namespace:
                        continue
                    kind = (
                        OptionKind.CAPACITY_BLOCK
                        if raw.get("ReservationType") == "capacity-block"
                        else OptionKind.ON_DEMAND_RESERVATION
                    )
                    reservation = _ec2_reservation(kind, account, region, raw)
                    found.append((_tags(raw).get(TAG_REQUEST), reservation))
            prefix = plan_name_prefix(namespace)
            summaries: list[Any] = []
            for plans in clients.sagemaker.get_paginator("list_training_plans").paginate():
                summaries += plans.get("TrainingPlanSummaries", [])
            for summary in summaries:
                if not str(summary["TrainingPlanName"]).startswith(prefix):
                    continue
                plan = self._plan(account, region, summary["TrainingPlanArn"])
                found.append((_request_from_plan(summary["TrainingPlanName"], prefix), plan))
        return found


def checked_call(client: Any, service: str, operation: str, **params: Any) -> dict[str, Any]:
    """Call `operation` once the parameters pass the service model (AWS's enums, maximums
    and patterns); a refusal here is certain: nothing was sent."""
    problems = request_problems(service, operation, params)
    if problems:
        raise PurchaseError(PurchaseProblem.REJECTED, "InvalidParameterValue", "; ".join(problems))
    method = getattr(client, xform_name(operation))
    return dict(method(**params))


def _all_blocks(clients: AwsClients, states: list[str] | None = None) -> list[Any]:
    params: dict[str, Any] = {}
    if states:
        params["Filters"] = [{"Name": "state", "Values": states}]
    blocks: list[Any] = []
    for page in clients.ec2.get_paginator("describe_capacity_blocks").paginate(**params):
        blocks += page.get("CapacityBlocks", [])
    return blocks


def _request_from_plan(name: str, prefix: str) -> str | None:
    rest = name.removeprefix(prefix)
    rid, _, attempt = rest.rpartition("-a")
    return rid.upper() if rid and attempt.isdigit() else None


def _ec2_reservation(kind: OptionKind, account: str, region: str, raw: Any) -> Reservation:
    return Reservation(
        kind=kind,
        id=raw["CapacityReservationId"],
        account=account,
        region=region,
        availability_zone=raw.get("AvailabilityZone"),
        instance_type=raw["InstanceType"],
        instances=int(raw.get("TotalInstanceCount", 0)),
        start=_utc(raw.get("StartDate") or raw["CreateDate"]),
        end=_utc(raw["EndDate"]) if raw.get("EndDate") else _utc(raw["CreateDate"]),
        state=raw["State"],
    )


def _tags(raw: Any) -> dict[str, str]:
    return {t["Key"]: t.get("Value", "") for t in raw.get("Tags", []) or []}


def _utc(value: datetime) -> datetime:
    # botocore parses SageMaker's epoch times in the host's zone: normalise everything.
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _code(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def purchase_error(exc: Exception, during: str, buying: bool = False) -> PurchaseError:
    """What a failed call means for the money.

    For the call that buys (`buying`): refused (AWS answered, nothing happened) or unknown
    (it may have happened). Unknown unless certain: no HTTP answer (a timeout, a reset
    connection), a server error, or an answer to a re-send (`RetryAttempts` > 0: an
    earlier attempt may have gone through, whatever the last one says).
    For the lookups around it (the re-check, the dry run, the search for an earlier
    purchase) nothing can have been bought: a failure without an answer only means AWS
    could not be asked now (UNAVAILABLE)."""
    unsure = PurchaseProblem.OUTCOME_UNKNOWN if buying else PurchaseProblem.UNAVAILABLE
    if not isinstance(exc, ClientError):
        if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
            # No connection was made: the request never left, nothing was bought.
            problem = PurchaseProblem.REJECTED if buying else PurchaseProblem.UNAVAILABLE
            return PurchaseError(problem, type(exc).__name__, str(exc))
        return PurchaseError(unsure, type(exc).__name__, str(exc))
    error = exc.response.get("Error", {})
    code, message = str(error.get("Code", "")), str(error.get("Message", ""))
    metadata = exc.response.get("ResponseMetadata", {})
    status = int(metadata.get("HTTPStatusCode", 400))
    retried = int(metadata.get("RetryAttempts", 0))
    if buying and retried > 0:
        return PurchaseError(
            unsure,
            code,
            f"{message} (the answer to a re-send: an earlier attempt may have gone through)",
        )
    if code in _ACCESS:
        match = _ACTION.search(message)
        action = match.group(1) if match else exc.operation_name
        return PurchaseError(PurchaseProblem.ACCESS_DENIED, code, message, action)
    if code in _THROTTLING:
        return PurchaseError(PurchaseProblem.THROTTLED, code, message)
    if code in _CAPACITY:
        return PurchaseError(PurchaseProblem.INSUFFICIENT_CAPACITY, code, message)
    if code in _LIMIT:
        return PurchaseError(PurchaseProblem.INSTANCE_LIMIT, code, message)
    if code in _GONE or "offering" in message.lower():
        return PurchaseError(PurchaseProblem.OFFERING_GONE, code, message)
    if status >= 500:
        # A server error: what was asked may have happened.
        return PurchaseError(unsure, code, message)
    log.warning("%s refused: %s %s", during, code, message)
    return PurchaseError(PurchaseProblem.REJECTED, code, message)
