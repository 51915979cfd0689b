"""How to use a reservation: the command people paste when their capacity starts."""

from __future__ import annotations

from dataclasses import dataclass


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
