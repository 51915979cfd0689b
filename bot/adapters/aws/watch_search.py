"""The one search a watch round makes for each question: EC2 DescribeCapacityBlockOfferings
or SageMaker SearchTrainingPlanOfferings over the whole flex window (StartDateRange /
EndDateRange search every start in it at once), read as the quote reads offerings."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.capacity_block_offerings import _capacity_block_offering
from bot.adapters.aws.market import ACCOUNT_LIMIT_CODES
from bot.adapters.aws.offerings import read_all
from bot.adapters.aws.training_plan_offerings import _training_plan_offering
from bot.domain.market import Offering, ReservationKind
from bot.domain.watch import Question
from bot.services.ports import SearchRefused, SearchThrottled

# What AWS answers when asked too often (after the SDK's own retries gave up).
THROTTLE_CODES = frozenset(
    {"RequestLimitExceeded", "ThrottlingException", "Throttling", "TooManyRequestsException"}
)


class AwsOfferingSearch:
    def __init__(self, clients: Callable[[str | None, str], AwsClients]) -> None:
        """`clients(account, region)`: the account's clients in a region."""
        self._clients = clients
        self.calls = 0  # searches made (each one AWS call, pages aside)
        self._lock = threading.Lock()

    def search(self, question: Question, account: str | None, now: datetime) -> list[Offering]:
        clients = self._clients(account, question.region)
        with self._lock:
            self.calls += 1
        try:
            if question.kind is ReservationKind.CAPACITY_BLOCK:
                return _blocks(clients, question, now)
            return _plans(clients, question, now)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in THROTTLE_CODES:
                raise SearchThrottled(code) from exc
            if code in ACCOUNT_LIMIT_CODES:
                raise SearchRefused(code, str(exc)) from exc
            raise


def _blocks(clients: AwsClients, q: Question, now: datetime) -> list[Offering]:
    raws: list[Any] = []
    paginator = clients.ec2.get_paginator("describe_capacity_block_offerings")
    for page in paginator.paginate(
        InstanceType=q.instance_type,
        InstanceCount=q.count,
        CapacityDurationHours=q.duration_hours,
        StartDateRange=max(q.earliest, now),
        EndDateRange=q.latest_end,
    ):
        raws.extend(page.get("CapacityBlockOfferings", []))
    read = read_all(
        raws,
        lambda raw: _capacity_block_offering(clients, raw, now),
        "Capacity Block",
        "CapacityBlockOfferingId",
    )
    return list(read)


def _plans(clients: AwsClients, q: Question, now: datetime) -> list[Offering]:
    response = clients.sagemaker.search_training_plan_offerings(
        InstanceType=f"ml.{q.instance_type}",  # type: ignore[arg-type]
        InstanceCount=q.count,
        StartTimeAfter=max(q.earliest, now),
        EndTimeBefore=q.latest_end,
        DurationHours=q.duration_hours,
        TargetResources=[q.target],  # type: ignore[list-item]
    )
    read = read_all(
        list(response.get("TrainingPlanOfferings", [])),
        lambda raw: _training_plan_offering(clients, raw, now),
        "training plan",
        "TrainingPlanOfferingId",
    )
    return list(read)
