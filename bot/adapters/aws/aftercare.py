"""After the purchase, on boto3: extension offers and purchases, and what is left after
the end (found, priced and deleted). Works on live AWS and on the sandbox market."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.offerings import SkipOffering, upfront_fee
from bot.adapters.aws.purchasing import checked_call, purchase_error
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.cleanup import Inventory, Leftover, LeftoverKind, inventory
from bot.domain.extension import ExtensionOffer, ExtensionPayment
from bot.domain.records import CapacityRecord, Reservation
from bot.services.ports import Clock, ExtensionUnavailable

log = logging.getLogger(__name__)
REQUEST_TAG = "gpu-bot:request-id"
LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped"]
BILLING_RESERVATION_STATES = frozenset({"active", "pending", "scheduled"})
# AWS terminates what still runs in a Capacity Block 30 minutes before it expires (EC2 User
# Guide, "Work with Capacity Blocks"): such an instance is going, and paid with the block.
BLOCK_TERMINATES_BEFORE_END = timedelta(minutes=30)
# Not found any more: as good as deleted.
GONE = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidCapacityReservationId.NotFound",
        "ResourceNotFound",
    }
)
# SageMaker answers ValidationException both for a resource that does not exist ('Could
# not find endpoint "x".') and for one it cannot act on yet (being deleted, still in use):
# only the first is gone (SageMaker API Reference, DeleteEndpoint / DeleteEndpointConfig /
# DeleteInferenceComponent, Errors).
_DOES_NOT_EXIST = ("could not find", "does not exist", "not found")


def gone(error: ClientError) -> bool:
    """Whether AWS's refusal says the resource is not there any more."""
    said = error.response.get("Error", {})
    code = str(said.get("Code", ""))
    if code in GONE:
        return True
    message = str(said.get("Message", "")).lower()
    return code == "ValidationException" and any(m in message for m in _DOES_NOT_EXIST)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


def _tags(raw: Any) -> dict[str, str]:
    return {t["Key"]: t.get("Value", "") for t in raw.get("Tags", []) or []}


# CapacityBlockExtensionStatus (EC2 API Reference, CapacityBlockExtension).
_BLOCK_PAYMENT = {
    "payment-succeeded": ExtensionPayment.PAID,
    "payment-pending": ExtensionPayment.PENDING,
    "payment-failed": ExtensionPayment.FAILED,
}


def _block_payment(raw: Any) -> ExtensionPayment:
    # Without a status AWS has not said it is paid: followed until it does.
    return _BLOCK_PAYMENT.get(
        str(raw.get("CapacityBlockExtensionStatus")), ExtensionPayment.PENDING
    )


def _plan_payment(raw: Any) -> ExtensionPayment:
    """A training plan extension's PaymentStatus is free text in the API reference
    (SageMaker, TrainingPlanExtension; "Completed" in the user guide's example, "Pending"
    while processing); its Status says Failed or Pending too."""
    said = f"{raw.get('PaymentStatus', '')} {raw.get('Status', '')}".lower()
    if "fail" in said:
        return ExtensionPayment.FAILED
    if "pending" in said or "processing" in said:
        return ExtensionPayment.PENDING
    return ExtensionPayment.PAID


def _extension_fee(raw: Any) -> tuple[float, str]:
    """An extension offer's fee, read as a main offering's is: without a fee, or in
    another currency than USD, it is not offered."""
    try:
        return upfront_fee(raw)
    except SkipOffering as exc:
        raise ExtensionUnavailable(
            f"AWS's extension offer cannot be bought as it is: {exc}"
        ) from exc


class AwsAftercare:
    """ExtensionMarket and Leftovers, in the account and region each reservation (or
    request) is in."""

    def __init__(self, accounts: AccountClients, catalog: Catalog, clock: Clock) -> None:
        self.accounts = accounts
        self.catalog = catalog
        self.clock = clock

    def _clients(self, record: CapacityRecord, region: str) -> AwsClients:
        res = record.reservation
        return self.accounts.clients(res.account if res else record.request.account, region)

    # --- extensions -----------------------------------------------------------------------

    def extension_offer(self, reservation: Reservation, hours: int) -> ExtensionOffer | None:
        try:
            return self._extension_offer(reservation, hours)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "looking up the extension offer") from exc

    def _extension_offer(self, reservation: Reservation, hours: int) -> ExtensionOffer | None:
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            found = aws.sagemaker.search_training_plan_offerings(
                TrainingPlanArn=reservation.id, DurationHours=hours
            ).get("TrainingPlanExtensionOfferings", [])
            if not found:
                return None
            plan: Any = found[0]
            fee, currency = _extension_fee(plan)
            return ExtensionOffer(
                offering_id=plan["TrainingPlanExtensionOfferingId"],
                hours=int(plan.get("DurationHours") or hours),
                start=_utc(plan["StartDate"]),
                end=_utc(plan["EndDate"]),
                fee_usd=fee,
                currency=currency,
            )
        # Paginated: a page may be empty while a NextToken says more follow.
        pages = aws.ec2.get_paginator("describe_capacity_block_extension_offerings").paginate(
            CapacityReservationId=reservation.id, CapacityBlockExtensionDurationHours=hours
        )
        offers = [o for page in pages for o in page.get("CapacityBlockExtensionOfferings", [])]
        if not offers:
            return None
        block: Any = offers[0]
        fee, currency = _extension_fee(block)
        return ExtensionOffer(
            offering_id=block["CapacityBlockExtensionOfferingId"],
            hours=int(block.get("CapacityBlockExtensionDurationHours") or hours),
            start=_utc(block["CapacityBlockExtensionStartDate"]),
            end=_utc(block["CapacityBlockExtensionEndDate"]),
            fee_usd=fee,
            currency=currency,
        )

    def current_end(self, reservation: Reservation) -> datetime:
        try:
            return self._current_end(reservation)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "looking up where the reservation ends") from exc

    def _current_end(self, reservation: Reservation) -> datetime:
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            plan = aws.sagemaker.describe_training_plan(TrainingPlanName=reservation.id)
            return _utc(plan["EndTime"])
        found = aws.ec2.describe_capacity_reservations(CapacityReservationIds=[reservation.id])
        return _utc(found["CapacityReservations"][0]["EndDate"])

    def buy_extension(self, reservation: Reservation, offer: ExtensionOffer) -> ExtensionPayment:
        """Neither extension call has a client token: both go out once (the `_once`
        clients), and a failure without a certain answer is OUTCOME_UNKNOWN."""
        aws = self.accounts.clients(reservation.account, reservation.region)
        try:
            if reservation.kind == "training-plan":
                done = checked_call(
                    aws.sagemaker_once,
                    "sagemaker",
                    "ExtendTrainingPlan",
                    TrainingPlanExtensionOfferingId=offer.offering_id,
                )["TrainingPlanExtensions"][0]
                return _plan_payment(done)
            bought = checked_call(
                aws.ec2_once,
                "ec2",
                "PurchaseCapacityBlockExtension",
                CapacityBlockExtensionOfferingId=offer.offering_id,
                CapacityReservationId=reservation.id,
            )["CapacityBlockExtensions"][0]
            return _block_payment(bought)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "buying the extension", buying=True) from exc

    def extension_payment(
        self, reservation: Reservation, offer: ExtensionOffer
    ) -> ExtensionPayment | None:
        try:
            for found in self._extension_history(reservation):
                if found.get("CapacityBlockExtensionOfferingId") == offer.offering_id:
                    return _block_payment(found)
                if found.get("TrainingPlanExtensionOfferingId") == offer.offering_id:
                    return _plan_payment(found)
        except (ClientError, BotoCoreError) as exc:
            raise purchase_error(exc, "looking up the extension's payment") from exc
        return None

    def _extension_history(self, reservation: Reservation) -> list[Any]:
        """Every extension AWS lists for the reservation, all pages."""
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            plan_pages = aws.sagemaker.get_paginator("describe_training_plan_extension_history")
            plans = plan_pages.paginate(TrainingPlanArn=reservation.id)
            return [item for page in plans for item in page.get("TrainingPlanExtensions", [])]
        block_pages = aws.ec2.get_paginator("describe_capacity_block_extension_history")
        blocks = block_pages.paginate(CapacityReservationIds=[reservation.id])
        return [item for page in blocks for item in page.get("CapacityBlockExtensions", [])]

    # --- leftovers ------------------------------------------------------------------------

    def find(self, record: CapacityRecord) -> Inventory:
        """What is left for the request: only what carries its tag is ours; what else
        runs in its reservation or on its plan is listed as not ours."""
        res = record.reservation
        region = res.region if res else record.request.region
        aws = self._clients(record, region)
        items: list[Leftover] = []
        if res is not None and res.kind == "on-demand-reservation":
            items += self._reservation_still_billing(aws, res, record.id)
        items += self._instances(aws, region, record.id, res)
        if res is not None and res.kind == "training-plan":
            items += self._endpoints_on_plan(aws, region, res.id, record.id)
        return inventory(items, self.clock.now())

    def _od_price(self, instance_type: str, region: str) -> float | None:
        price = self.catalog.price(PriceKind.ON_DEMAND, instance_type, region)
        return price.usd_per_hour if price else None

    def _reservation_still_billing(
        self, aws: AwsClients, res: Reservation, request_id: str
    ) -> list[Leftover]:
        try:
            found = aws.ec2.describe_capacity_reservations(CapacityReservationIds=[res.id])
        except ClientError as error:
            if gone(error):
                return []
            raise
        items = []
        for cr in found.get("CapacityReservations", []):
            if cr.get("State") in BILLING_RESERVATION_STATES:
                hourly = self._od_price(cr["InstanceType"], res.region)
                # An ODCR bills its unused capacity; instances in it are billed as themselves.
                unused = int(cr.get("AvailableInstanceCount", cr.get("TotalInstanceCount", 0)))
                cost = hourly * unused if hourly is not None else None
                ours = _tags(cr).get(REQUEST_TAG) == request_id
                items.append(
                    Leftover(
                        LeftoverKind.CAPACITY_RESERVATION,
                        cr["CapacityReservationId"],
                        res.region,
                        cost if ours else None,
                        f"{unused} unused x {cr['InstanceType']}: cancel it now"
                        if ours
                        else f"not tagged {REQUEST_TAG}={request_id}",
                        ours=ours,
                    )
                )
        return items

    def _instances(
        self, aws: AwsClients, region: str, request_id: str, res: Reservation | None
    ) -> list[Leftover]:
        """Instances tagged for the request (ours), and those running in its reservation
        without the tag (not ours: someone else's, left alone)."""
        items = [
            self._instance(instance, region, res, ours=True)
            for instance in self._live_instances(aws, f"tag:{REQUEST_TAG}", request_id)
        ]
        if res is not None and res.kind != "training-plan":
            for instance in self._live_instances(aws, "capacity-reservation-id", res.id):
                ours = _tags(instance).get(REQUEST_TAG) == request_id
                items.append(self._instance(instance, region, res, ours=ours))
        return items

    def _terminated_by_aws(self, instance: Any, res: Reservation | None) -> bool:
        """An instance of the request's Capacity Block once AWS terminates them."""
        return (
            res is not None
            and res.kind == "capacity-block"
            and instance.get("CapacityReservationId") == res.id
            and self.clock.now() >= res.end - BLOCK_TERMINATES_BEFORE_END
        )

    def _live_instances(self, aws: AwsClients, name: str, value: str) -> list[Any]:
        pages = aws.ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": name, "Values": [value]},
                {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES},
            ]
        )
        return [
            instance
            for page in pages
            for group in page.get("Reservations", [])
            for instance in group.get("Instances", [])
        ]

    def _instance(
        self, instance: Any, region: str, res: Reservation | None, ours: bool
    ) -> Leftover:
        kind = instance.get("InstanceType", "")
        state = (instance.get("State") or {}).get("Name", "?")
        by_aws = self._terminated_by_aws(instance, res)
        priced = ours and state != "stopped" and not by_aws
        note = f"{kind}, {state}"
        if by_aws:
            note += ", in the ended Capacity Block: AWS terminates it (paid with the block)"
        if not ours:
            note += f", in the reservation but not tagged {REQUEST_TAG}"
        return Leftover(
            LeftoverKind.INSTANCE,
            instance["InstanceId"],
            region,
            self._od_price(kind, region) if priced else None,
            note,
            ours=ours,
        )

    def _endpoints_on_plan(
        self, aws: AwsClients, region: str, plan_arn: str, request_id: str
    ) -> list[Leftover]:
        """Endpoints on the plan, with their configs and components; ours when each
        carries the request's tag (the bot tags everything it deploys)."""
        sm = aws.sagemaker

        def ours(arn: str | None) -> bool:
            if not arn:
                return False
            return _tags(sm.list_tags(ResourceArn=arn)).get(REQUEST_TAG) == request_id

        items: list[Leftover] = []
        for page in sm.get_paginator("list_endpoints").paginate():
            for summary in page.get("Endpoints", []):
                name = summary["EndpointName"]
                endpoint = sm.describe_endpoint(EndpointName=name)
                config_name = endpoint["EndpointConfigName"]
                config = sm.describe_endpoint_config(EndpointConfigName=config_name)
                on_plan = any(
                    (v.get("CapacityReservationConfig") or {}).get("MlReservationArn") == plan_arn
                    for v in config.get("ProductionVariants", [])
                )
                if not on_plan:
                    continue
                note = "its training plan has ended: it no longer serves"
                for cpage in sm.get_paginator("list_inference_components").paginate(
                    EndpointNameEquals=name
                ):
                    for component in cpage.get("InferenceComponents", []):
                        items.append(
                            Leftover(
                                LeftoverKind.INFERENCE_COMPONENT,
                                component["InferenceComponentName"],
                                region,
                                None,
                                f"on {name}",
                                ours=ours(component.get("InferenceComponentArn")),
                            )
                        )
                items.append(
                    Leftover(
                        LeftoverKind.ENDPOINT,
                        name,
                        region,
                        None,
                        note,
                        ours=ours(endpoint.get("EndpointArn")),
                    )
                )
                items.append(
                    Leftover(
                        LeftoverKind.ENDPOINT_CONFIG,
                        config_name,
                        region,
                        ours=ours(config.get("EndpointConfigArn")),
                    )
                )
        return items

    def delete(self, record: CapacityRecord, items: Sequence[Leftover]) -> None:
        """Delete the request's own resources; anything not tagged for it is left alone,
        whatever reservation it runs in (an instance's tag is looked at again just before
        it is terminated)."""
        for item in items:
            aws = self._clients(record, item.region)
            if not item.ours or not self._still_ours(aws, item, record.id):
                log.warning("%s %s is not tagged for %s: left alone", item.kind, item.id, record.id)
                continue
            try:
                self._delete_one(aws, item)
            except ClientError as error:
                if gone(error):
                    log.info("%s %s was already gone", item.kind.value, item.id)
                elif error.response["Error"]["Code"] == "ValidationException":
                    # Not deletable yet (being deleted, still in use): the look after this
                    # delete pass finds it again and deletes it again.
                    log.warning(
                        "%s %s not deleted yet, looked at again later: %s",
                        item.kind.value,
                        item.id,
                        error.response["Error"].get("Message", ""),
                    )
                else:
                    raise

    def _still_ours(self, aws: AwsClients, item: Leftover, request_id: str) -> bool:
        if item.kind is not LeftoverKind.INSTANCE:
            return True  # found tagged a moment ago; endpoints' tags do not change
        try:
            found = aws.ec2.describe_instances(InstanceIds=[item.id])
        except ClientError as error:
            if gone(error):
                return False
            raise
        instances = [i for r in found.get("Reservations", []) for i in r.get("Instances", [])]
        return any(_tags(i).get(REQUEST_TAG) == request_id for i in instances)

    def _delete_one(self, aws: AwsClients, item: Leftover) -> None:
        if item.kind is LeftoverKind.INSTANCE:
            aws.ec2.terminate_instances(InstanceIds=[item.id])
        elif item.kind is LeftoverKind.CAPACITY_RESERVATION:
            aws.ec2.cancel_capacity_reservation(CapacityReservationId=item.id)
        elif item.kind is LeftoverKind.INFERENCE_COMPONENT:
            aws.sagemaker.delete_inference_component(InferenceComponentName=item.id)
        elif item.kind is LeftoverKind.ENDPOINT:
            aws.sagemaker.delete_endpoint(EndpointName=item.id)
        else:
            aws.sagemaker.delete_endpoint_config(EndpointConfigName=item.id)
