"""After the purchase, on boto3: extension offers and purchases, and what is left after
the end (found, priced and deleted). Works on live AWS and on the sandbox market."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from botocore.exceptions import ClientError

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.market import AwsClients
from bot.domain.catalog import Catalog, PriceKind
from bot.domain.cleanup import Inventory, Leftover, LeftoverKind, inventory
from bot.domain.extension import ExtensionOffer
from bot.domain.records import CapacityRecord, Reservation
from bot.services.ports import Clock

log = logging.getLogger(__name__)
REQUEST_TAG = "gpu-bot:request-id"
LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped"]
BILLING_RESERVATION_STATES = frozenset({"active", "pending", "scheduled"})
# Not found any more: as good as deleted.
GONE = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidCapacityReservationId.NotFound",
        "ValidationException",
        "ResourceNotFound",
    }
)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


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
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            found = aws.sagemaker.search_training_plan_offerings(
                TrainingPlanArn=reservation.id, DurationHours=hours
            ).get("TrainingPlanExtensionOfferings", [])
            if not found:
                return None
            plan = found[0]
            return ExtensionOffer(
                offering_id=plan["TrainingPlanExtensionOfferingId"],
                hours=int(plan.get("DurationHours") or hours),
                start=_utc(plan["StartDate"]),
                end=_utc(plan["EndDate"]),
                fee_usd=float(plan.get("UpfrontFee") or 0),
                currency=plan.get("CurrencyCode") or "USD",
            )
        offers = aws.ec2.describe_capacity_block_extension_offerings(
            CapacityReservationId=reservation.id, CapacityBlockExtensionDurationHours=hours
        ).get("CapacityBlockExtensionOfferings", [])
        if not offers:
            return None
        block = offers[0]
        return ExtensionOffer(
            offering_id=block["CapacityBlockExtensionOfferingId"],
            hours=int(block.get("CapacityBlockExtensionDurationHours") or hours),
            start=_utc(block["CapacityBlockExtensionStartDate"]),
            end=_utc(block["CapacityBlockExtensionEndDate"]),
            fee_usd=float(block.get("UpfrontFee") or 0),
            currency=block.get("CurrencyCode") or "USD",
        )

    def current_end(self, reservation: Reservation) -> datetime:
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            plan = aws.sagemaker.describe_training_plan(TrainingPlanName=reservation.id)
            return _utc(plan["EndTime"])
        found = aws.ec2.describe_capacity_reservations(CapacityReservationIds=[reservation.id])
        return _utc(found["CapacityReservations"][0]["EndDate"])

    def buy_extension(self, reservation: Reservation, offer: ExtensionOffer) -> Reservation:
        aws = self.accounts.clients(reservation.account, reservation.region)
        if reservation.kind == "training-plan":
            done = aws.sagemaker.extend_training_plan(
                TrainingPlanExtensionOfferingId=offer.offering_id
            )["TrainingPlanExtensions"][0]
            end = _utc(done["EndDate"]) if done.get("EndDate") else offer.end
        else:
            bought = aws.ec2.purchase_capacity_block_extension(
                CapacityBlockExtensionOfferingId=offer.offering_id,
                CapacityReservationId=reservation.id,
            )["CapacityBlockExtensions"][0]
            end = _utc(bought.get("CapacityBlockExtensionEndDate") or offer.end)
        fee = (reservation.fee_usd or 0.0) + offer.fee_usd
        return reservation.model_copy(update={"end": end, "fee_usd": fee})

    # --- leftovers ------------------------------------------------------------------------

    def find(self, record: CapacityRecord) -> Inventory:
        res = record.reservation
        region = res.region if res else record.request.region
        aws = self._clients(record, region)
        items: list[Leftover] = []
        if res is not None and res.kind == "on-demand-reservation":
            items += self._reservation_still_billing(aws, res)
        items += self._instances(aws, region, record.id, res)
        if res is not None and res.kind == "training-plan":
            items += self._endpoints_on_plan(aws, region, res.id)
        return inventory(items, self.clock.now())

    def _od_price(self, instance_type: str, region: str) -> float | None:
        price = self.catalog.price(PriceKind.ON_DEMAND, instance_type, region)
        return price.usd_per_hour if price else None

    def _reservation_still_billing(self, aws: AwsClients, res: Reservation) -> list[Leftover]:
        try:
            found = aws.ec2.describe_capacity_reservations(CapacityReservationIds=[res.id])
        except ClientError as error:
            if error.response["Error"]["Code"] in GONE:
                return []
            raise
        items = []
        for cr in found.get("CapacityReservations", []):
            if cr.get("State") in BILLING_RESERVATION_STATES:
                hourly = self._od_price(cr["InstanceType"], res.region)
                # An ODCR bills its unused capacity; instances in it are billed as themselves.
                unused = int(cr.get("AvailableInstanceCount", cr.get("TotalInstanceCount", 0)))
                cost = hourly * unused if hourly is not None else None
                items.append(
                    Leftover(
                        LeftoverKind.CAPACITY_RESERVATION,
                        cr["CapacityReservationId"],
                        res.region,
                        cost,
                        f"{unused} unused x {cr['InstanceType']}: cancel it now",
                    )
                )
        return items

    def _instances(
        self, aws: AwsClients, region: str, request_id: str, res: Reservation | None
    ) -> list[Leftover]:
        searches: list[tuple[str, str]] = [(f"tag:{REQUEST_TAG}", request_id)]
        if res is not None and res.kind != "training-plan":
            searches.append(("capacity-reservation-id", res.id))
        items = []
        for name, value in searches:
            pages = aws.ec2.get_paginator("describe_instances").paginate(
                Filters=[
                    {"Name": name, "Values": [value]},
                    {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES},
                ]
            )
            for page in pages:
                for group in page.get("Reservations", []):
                    for instance in group.get("Instances", []):
                        kind = instance.get("InstanceType", "")
                        running = (instance.get("State") or {}).get("Name") != "stopped"
                        items.append(
                            Leftover(
                                LeftoverKind.INSTANCE,
                                instance["InstanceId"],
                                region,
                                self._od_price(kind, region) if running else None,
                                f"{kind}, {(instance.get('State') or {}).get('Name', '?')}",
                            )
                        )
        return items

    def _endpoints_on_plan(self, aws: AwsClients, region: str, plan_arn: str) -> list[Leftover]:
        sm = aws.sagemaker
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
                            )
                        )
                items.append(Leftover(LeftoverKind.ENDPOINT, name, region, None, note))
                items.append(Leftover(LeftoverKind.ENDPOINT_CONFIG, config_name, region))
        return items

    def delete(self, record: CapacityRecord, items: Sequence[Leftover]) -> None:
        for item in items:
            aws = self._clients(record, item.region)
            try:
                self._delete_one(aws, item)
            except ClientError as error:
                if error.response["Error"]["Code"] not in GONE:
                    raise
                log.info("%s %s was already gone", item.kind.value, item.id)

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
