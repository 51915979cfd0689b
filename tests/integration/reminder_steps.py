"""Steps shared by the reminder tests: a request bought as the purchase flow records it,
tracking's state changes, and reading the messages people got at the fake Web API."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.domain.audit import BOT, AuditEntry
from bot.domain.comparison import OptionKind
from bot.domain.events import Tracked
from bot.domain.lifecycle import State
from bot.domain.purchase import purchase_tags
from bot.domain.records import CapacityRecord, Choice, Reservation
from bot.services.changes import Change
from tests.factories import make_record
from tests.slack_harness import APPROVER, REQUESTER, BotUnderTest
from tests.unit.test_comparison import quote, req

DM = "D" + REQUESTER[1:]


def buy(bot: BotUnderTest, kind: OptionKind, request_id: str = "R1", days: int = 3) -> Reservation:
    """Buy capacity for real from the sandbox market (so extensions and leftovers find it),
    tagged as the purchase flow tags it (the shipped IAM policies require the tags), and
    record it as the purchase flow does: approved -> purchasing -> scheduled."""
    aws = bot.aws("us-east-1")
    now = bot.clock.now()
    tags = purchase_tags(bot.settings.namespace, request_id, REQUESTER, [APPROVER])
    if kind is OptionKind.TRAINING_PLAN:
        offer = aws.sagemaker.search_training_plan_offerings(
            InstanceType="ml.p5.48xlarge",
            InstanceCount=2,
            DurationHours=24 * days,
            StartTimeAfter=now + timedelta(days=3),
            TargetResources=["training-job", "endpoint"],
        )["TrainingPlanOfferings"][0]
        arn = aws.sagemaker.create_training_plan(
            TrainingPlanName=f"gpu-bot-{request_id.lower()}",
            TrainingPlanOfferingId=offer["TrainingPlanOfferingId"],
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )["TrainingPlanArn"]
        part = offer["ReservedCapacityOfferings"]
        start, end, zone, rid = part[0]["StartTime"], part[-1]["EndTime"], None, arn
        fee = float(offer["UpfrontFee"])
    elif kind is OptionKind.CAPACITY_BLOCK:
        offer = aws.ec2.describe_capacity_block_offerings(
            InstanceType="p5.48xlarge",
            InstanceCount=2,
            CapacityDurationHours=24 * days,
            StartDateRange=now + timedelta(days=3),
        )["CapacityBlockOfferings"][0]
        bought = aws.ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offer["CapacityBlockOfferingId"],
            InstancePlatform="Linux/UNIX",
            TagSpecifications=[
                {
                    "ResourceType": "capacity-reservation",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ],
        )["CapacityReservation"]
        start, end = bought["StartDate"], bought["EndDate"]
        zone, rid, fee = (
            bought["AvailabilityZone"],
            bought["CapacityReservationId"],
            float(offer["UpfrontFee"]),
        )
    else:  # an On-Demand Capacity Reservation the sandbox does not sell: recorded only
        start = now + timedelta(days=3)
        end = start + timedelta(days=days)
        zone, rid, fee = "us-east-1a", "cr-0odcr", None
    reservation = Reservation(
        kind=kind,
        id=rid,
        region="us-east-1",
        availability_zone=zone,
        instance_type="p5.48xlarge",
        instances=2,
        start=start,
        end=end,
        fee_usd=fee,
        state="scheduled",
    )
    choice = Choice(kind=kind, total_usd=fee or 0.0)
    # The quote it was approved on: its On-Demand rate prices an ODCR's hours.
    record = make_record(
        request_id,
        state=State.APPROVED,
        created_at=now,
        updated_at=now,
        choice=choice,
        quote=quote(req()),
    )
    entry = AuditEntry(request_id, BOT, "created", "approved", "approved", now)
    bot.services.store.create(record, entry)
    move(bot, request_id, State.PURCHASING)
    move(bot, request_id, State.SCHEDULED, reservation=reservation)
    return reservation


def move(bot: BotUnderTest, request_id: str, state: State, **changes: Any) -> CapacityRecord:
    """A change as tracking or purchasing makes it: a compare-and-set with what every
    change causes (the reminders follow), telling nobody."""

    def decide(r: CapacityRecord) -> Change:
        new = r.model_copy(update={"state": state, **changes})
        return Change(new, Tracked(), state.value, BOT)

    saved, _ = bot.services.changes.apply(request_id, decide)
    assert saved is not None
    return saved


def at(bot: BotUnderTest, when: datetime) -> None:
    """Move the clock to `when` and run whatever is due."""
    bot.clock.set(when)
    bot.wait()


def texts(bot: BotUnderTest, channel: str = DM, everything: bool = False) -> list[str]:
    """The messages in `channel`; without `everything`, not the measured use's (idle alerts
    and report cards, which tests/integration/test_utilisation.py reads)."""
    sent = [m["text"] for m in bot.fake.messages.get(channel, [])]
    return sent if everything else [t for t in sent if not _measured_use(t)]


def _measured_use(text: str) -> bool:
    return " has been idle for " in text or (
        text.startswith("Request R")
        and ": " in text
        and ("cheaper." in text or "saved $" in text or "No On-Demand price" in text)
    )


def keys(bot: BotUnderTest) -> list[str]:
    return bot.fake.delivery_keys()


def audit_actions(bot: BotUnderTest, request_id: str = "R1") -> list[str]:
    return [e.action for e in bot.services.store.audit(request_id)]
