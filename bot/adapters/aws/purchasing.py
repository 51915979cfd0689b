"""Buying and following reservations with boto3 (live AWS or the sandbox market).

Implements the `Purchaser` port. Every call runs in the order's account; throttling is
retried by the clients themselves (botocore standard mode, see clients.py), so what
reaches the service is a decision: refused (nothing bought) or unknown (maybe bought).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.market import AwsClients, AwsMarket
from bot.domain.catalog import Catalog
from bot.domain.comparison import OptionKind
from bot.domain.market import Offering
from bot.domain.purchase import TAG_NAMESPACE, TAG_REQUEST, BlockInUse, plan_name_prefix
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
            raise _purchase_error(exc, f"looking up the offering ({name})") from exc
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
            raise _purchase_error(exc, "the dry run") from exc
        except BotoCoreError as exc:
            raise _purchase_error(exc, "the dry run") from exc

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
            raise _purchase_error(exc, "the purchase") from exc
        return self._reservation_from(order, response)

    def _call(self, order: Order, dry_run: bool) -> dict[str, Any]:
        clients = self._clients(order.account, order.region)
        # Typed as Any: the stubs' TypedDict unions reject plain dict literals here.
        ec2: Any = clients.ec2
        sagemaker: Any = clients.sagemaker
        tags = [{"Key": k, "Value": v} for k, v in order.tags.items()]
        if order.kind is OptionKind.CAPACITY_BLOCK:
            result: dict[str, Any] = dict(
                ec2.purchase_capacity_block(
                    CapacityBlockOfferingId=str(order.offering_id),
                    InstancePlatform=PLATFORM,
                    TagSpecifications=[
                        {"ResourceType": "capacity-reservation", "Tags": tags},
                        {"ResourceType": "capacity-block", "Tags": tags},
                    ],
                    DryRun=dry_run,
                )
            )
            return result
        if order.kind is OptionKind.TRAINING_PLAN:
            return dict(
                sagemaker.create_training_plan(
                    TrainingPlanName=order.token,
                    TrainingPlanOfferingId=str(order.offering_id),
                    Tags=tags,
                )
            )
        if order.kind is OptionKind.ON_DEMAND_RESERVATION:
            return dict(
                ec2.create_capacity_reservation(
                    ClientToken=order.token,
                    InstanceType=order.instance_type,
                    InstancePlatform=PLATFORM,
                    AvailabilityZone=self._zone(clients),
                    InstanceCount=order.count,
                    EndDateType="limited",
                    EndDate=order.end,
                    InstanceMatchCriteria="open",
                    TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": tags}],
                    DryRun=dry_run,
                )
            )
        raise ValueError(f"nothing to buy for {order.kind.value}")

    def _zone(self, clients: AwsClients) -> str:
        zones = clients.ec2.describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}]
        )["AvailabilityZones"]
        return str(zones[0]["ZoneName"])

    def _reservation_from(self, order: Order, response: dict[str, Any]) -> Reservation:
        if order.kind is OptionKind.TRAINING_PLAN:
            return self._plan(order.account, order.region, str(response["TrainingPlanArn"]))
        raw = response["CapacityReservation"]
        reservation = _ec2_reservation(order.kind, order.account, order.region, raw)
        return reservation.model_copy(update={"fee_usd": order.fee_usd})

    # --- finding and following ---------------------------------------------------------

    def find(self, order: Order) -> Reservation | None:
        clients = self._clients(order.account, order.region)
        if order.kind is OptionKind.TRAINING_PLAN:
            try:
                plan = self._plan(order.account, order.region, order.token)
                plan_tags = clients.sagemaker.list_tags(ResourceArn=plan.id).get("Tags", [])
            except ClientError as exc:
                if _code(exc) in ("ResourceNotFound", "ValidationException"):
                    return None
                raise
            # The name is ours only if the plan carries this request's tag.
            mine = {t["Key"]: t["Value"] for t in plan_tags}.get(TAG_REQUEST) == order.tags.get(
                TAG_REQUEST
            )
            return plan if mine else None
        request_id = order.tags.get(TAG_REQUEST, "")
        paginator = clients.ec2.get_paginator("describe_capacity_reservations")
        for page in paginator.paginate(
            Filters=[{"Name": f"tag:{TAG_REQUEST}", "Values": [request_id]}]
        ):
            for raw in page.get("CapacityReservations", []):
                if _tags(raw).get(TAG_NAMESPACE) == order.tags.get(TAG_NAMESPACE):
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
            paginator = clients.ec2.get_paginator("describe_capacity_reservations")
            for page in paginator.paginate(
                Filters=[{"Name": f"tag:{TAG_NAMESPACE}", "Values": [namespace]}]
            ):
                for raw in page.get("CapacityReservations", []):
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


def _purchase_error(exc: Exception, during: str) -> PurchaseError:
    if not isinstance(exc, ClientError):
        if isinstance(exc, ReadTimeoutError | ConnectionClosedError):
            return PurchaseError(PurchaseProblem.OUTCOME_UNKNOWN, type(exc).__name__, str(exc))
        if isinstance(exc, EndpointConnectionError):
            # The request never left: nothing was bought.
            return PurchaseError(PurchaseProblem.REJECTED, type(exc).__name__, str(exc))
        return PurchaseError(PurchaseProblem.OUTCOME_UNKNOWN, type(exc).__name__, str(exc))
    error = exc.response.get("Error", {})
    code, message = str(error.get("Code", "")), str(error.get("Message", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
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
        # A server error on a call without an idempotency token: it may have happened.
        return PurchaseError(PurchaseProblem.OUTCOME_UNKNOWN, code, message)
    log.warning("%s refused: %s %s", during, code, message)
    return PurchaseError(PurchaseProblem.REJECTED, code, message)
