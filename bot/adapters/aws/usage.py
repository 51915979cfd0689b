"""How many instances run, batched: one call for up to 1,000 capacity reservations, one
page of training plans per region, one call for up to 200 requests' tagged instances.

- Capacity Blocks and ODCRs: DescribeCapacityReservations, TotalInstanceCount -
  AvailableInstanceCount (EC2 API Reference, DescribeCapacityReservations: MaxResults
  1 to 1000, CapacityReservationIds; CapacityReservation: AvailableInstanceCount "the
  remaining capacity", TotalInstanceCount).
- Training plans: ListTrainingPlans, InUseInstanceCount of each summary (SageMaker API
  Reference, TrainingPlanSummary; MaxResults 1 to 100, filtered on Status=Active): one
  paged listing per region instead of one DescribeTrainingPlan per plan.
- On-Demand and Spot windows: DescribeInstances filtered on tag:gpu-bot:request-id and
  instance-state-name pending/running (EC2 API Reference, DescribeInstances; filter values
  are sent 200 at a time, the documented most per filter).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.adapters.aws.accounts import AccountClients
from bot.adapters.aws.aftercare import REQUEST_TAG
from bot.services.ports import Measure, Target

log = logging.getLogger(__name__)
RESERVATIONS_PER_CALL = 1000
TAG_VALUES_PER_CALL = 200
PLANS_PER_PAGE = 100
INSTANCES_PER_PAGE = 1000


def _chunks(items: Sequence[Target], size: int) -> Iterator[Sequence[Target]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class AwsUsage:
    """UsageMeter on boto3, in each target's account and region."""

    def __init__(self, accounts: AccountClients) -> None:
        self.accounts = accounts

    def running(self, targets: Sequence[Target]) -> dict[Target, int]:
        groups: dict[tuple[str | None, str, Measure], list[Target]] = defaultdict(list)
        for target in dict.fromkeys(targets):
            groups[(target.account, target.region, target.measure)].append(target)
        found: dict[Target, int] = {}
        for (account, region, measure), group in groups.items():
            try:
                found |= self._count(account, region, measure, group)
            except (ClientError, BotoCoreError) as error:
                # Not sampled this round: the next one tries again.
                log.warning("could not count %s in %s/%s: %s", measure, account, region, error)
        return found

    def _count(
        self, account: str | None, region: str, measure: Measure, group: list[Target]
    ) -> dict[Target, int]:
        aws = self.accounts.clients(account, region)
        if measure is Measure.CAPACITY_RESERVATION:
            out: dict[Target, int] = {}
            for chunk in _chunks(group, RESERVATIONS_PER_CALL):
                out |= self._reservations(aws.ec2, chunk)
            return out
        if measure is Measure.TRAINING_PLAN:
            return self._plans(aws.sagemaker, group)
        out = {}
        for chunk in _chunks(group, TAG_VALUES_PER_CALL):
            out |= self._tagged(aws.ec2, chunk)
        return out

    def _reservations(self, ec2: Any, chunk: Sequence[Target]) -> dict[Target, int]:
        by_id = {t.id: t for t in chunk}
        try:
            listed = self._pages(
                lambda params: ec2.describe_capacity_reservations(**params),
                "CapacityReservations",
                CapacityReservationIds=list(by_id),  # at most 1000: one page
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "InvalidCapacityReservationId.NotFound":
                raise
            if len(chunk) == 1:
                return {}  # gone: nothing runs in it
            half = len(chunk) // 2  # one unknown id fails the call: look in halves
            return self._reservations(ec2, chunk[:half]) | self._reservations(ec2, chunk[half:])
        out = {}
        for cr in listed:
            target = by_id.get(cr["CapacityReservationId"])
            if target is not None:
                used = int(cr.get("TotalInstanceCount", 0)) - int(
                    cr.get("AvailableInstanceCount", 0)
                )
                out[target] = max(used, 0) if cr.get("State") == "active" else 0
        return out

    def _plans(self, sagemaker: Any, group: list[Target]) -> dict[Target, int]:
        by_arn = {t.id: t for t in group}
        listed = self._pages(
            lambda params: sagemaker.list_training_plans(**params),
            "TrainingPlanSummaries",
            Filters=[{"Name": "Status", "Value": "Active"}],
            MaxResults=PLANS_PER_PAGE,
        )
        out = dict.fromkeys(group, 0)  # not listed as Active: nothing runs on it
        for plan in listed:
            target = by_arn.get(plan["TrainingPlanArn"])
            if target is not None:
                out[target] = int(plan.get("InUseInstanceCount") or 0)
        return out

    def _tagged(self, ec2: Any, chunk: Sequence[Target]) -> dict[Target, int]:
        by_request = {t.id: t for t in chunk}
        listed = self._pages(
            lambda params: ec2.describe_instances(**params),
            "Reservations",
            Filters=[
                {"Name": f"tag:{REQUEST_TAG}", "Values": list(by_request)},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ],
            MaxResults=INSTANCES_PER_PAGE,
        )
        out = dict.fromkeys(chunk, 0)
        for reservation in listed:
            for instance in reservation.get("Instances", []):
                tags = {t["Key"]: t.get("Value", "") for t in instance.get("Tags", []) or []}
                target = by_request.get(tags.get(REQUEST_TAG, ""))
                if target is not None:
                    out[target] += 1
        return out

    @staticmethod
    def _pages(call: Callable[[dict[str, Any]], Any], member: str, **params: Any) -> list[Any]:
        items: list[Any] = []
        while True:
            page = call(params)
            items += page.get(member, [])
            token = page.get("NextToken")
            if not token:
                return items
            params["NextToken"] = token
