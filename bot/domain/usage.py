"""How to use a reservation: the command people paste when their capacity starts."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.purchase import TAG_REQUEST


@dataclass(frozen=True)
class UsageHint:
    title: str
    command: str


# Why every launch line carries the tag: cleanup calls an instance the request's only when
# it carries it, and the bot's IAM may terminate only instances that do.
WHY_TAGGED = (
    f"tagged {TAG_REQUEST}: the cleanup after the window recognises, and may terminate, "
    "only instances that carry the request's tag; it leaves anything else running"
)


def tag_specification(request_id: str) -> str:
    """The `--tag-specifications` argument that marks an instance as the request's."""
    return f"'ResourceType=instance,Tags=[{{Key={TAG_REQUEST},Value={request_id}}}]'"


def usage_hint(
    kind: str,
    reservation_id: str,
    region: str,
    zone: str | None,
    instance_type: str,
    instances: int,
    request_id: str,
) -> UsageHint:
    """The launch command for a Capacity Block or an ODCR, tagged with the request, or
    the SageMaker settings that put a training job or an endpoint on a training plan."""
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
        f"Launch into the reservation (pick your AMI and a subnet in that zone), {WHY_TAGGED}:",
        f"aws ec2 run-instances --region {region} --image-id <ami-id>"
        f" --instance-type {instance_type} --count {instances}{market}{placement}"
        " --capacity-reservation-specification"
        f" 'CapacityReservationTarget={{CapacityReservationId={reservation_id}}}'"
        f" --tag-specifications {tag_specification(request_id)}",
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
    if sagemaker:
        return UsageHint(
            f"Tag the SageMaker jobs and endpoints you start for it with {TAG_REQUEST}="
            f"{request_id}, so that the cleanup after the window finds them:",
            f"--tags Key={TAG_REQUEST},Value={request_id}",
        )
    market = " --instance-market-options MarketType=spot" if kind == "spot" else ""
    return UsageHint(
        f"Launch (pick your AMI), {WHY_TAGGED}:",
        f"aws ec2 run-instances --region {region} --image-id <ami-id>"
        f" --instance-type {instance_type} --count {instances}{market}"
        f" --tag-specifications {tag_specification(request_id)}",
    )
