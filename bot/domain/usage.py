"""How to use a reservation: the command people paste when their capacity starts."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.purchase import TAG_REQUEST


@dataclass(frozen=True)
class UsageHint:
    title: str
    command: str


def usage_hint(
    kind: str,
    reservation_id: str,
    region: str,
    zone: str | None,
    instance_type: str,
    instances: int,
) -> UsageHint:
    """The launch command for a Capacity Block or an ODCR, or the SageMaker settings that
    put a training job or an endpoint on a training plan."""
    if kind == "training-plan":
        return UsageHint(
            "Use the plan from a SageMaker training job (ResourceConfig) or an endpoint "
            "(ProductionVariant.CapacityReservationConfig):",
            f'"TrainingPlanArn": "{reservation_id}"\n'
            '"CapacityReservationConfig": {"CapacityReservationPreference": '
            f'"capacity-reservations-only", "MlReservationArn": "{reservation_id}"}}',
        )
    block = kind == "capacity-block"
    market = " --instance-market-options MarketType=capacity-block" if block else ""
    placement = f" --placement AvailabilityZone={zone}" if zone else ""
    return UsageHint(
        "Launch into the reservation (pick your AMI):",
        f"aws ec2 run-instances --region {region} --image-id <ami-id>"
        f" --instance-type {instance_type} --count {instances}{market}{placement}"
        " --capacity-reservation-specification"
        f" 'CapacityReservationTarget={{CapacityReservationId={reservation_id}}}'",
    )


def window_launch_hint(
    kind: str,
    request_id: str,
    region: str,
    instance_type: str,
    instances: int,
    sagemaker: bool = False,
) -> UsageHint:
    """On-Demand or Spot: nothing is bought, so the command launches straight into the
    market, tagged with the request: the cleanup after the window looks for that tag
    (and leaves anything without it alone)."""
    tag = f"Key={TAG_REQUEST},Value={request_id}"
    if sagemaker:
        return UsageHint(
            f"Tag the SageMaker jobs and endpoints you start for it with {TAG_REQUEST}="
            f"{request_id}, so that the cleanup after the window finds them:",
            f"--tags {tag}",
        )
    market = " --instance-market-options MarketType=spot" if kind == "spot" else ""
    return UsageHint(
        "Launch (pick your AMI), tagged with the request so that the cleanup after the "
        "window finds what still runs:",
        f"aws ec2 run-instances --region {region} --image-id <ami-id>"
        f" --instance-type {instance_type} --count {instances}{market}"
        f" --tag-specifications 'ResourceType=instance,Tags=[{{{tag}}}]'",
    )
