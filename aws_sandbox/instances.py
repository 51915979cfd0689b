"""EC2 instances: RunInstances, DescribeInstances, TerminateInstances and CreateTags, and
which capacity reservation each one runs in.

Rules (EC2 User Guide, "Capacity Reservations": targeted and open matching; "Use Capacity
Blocks": launching into a block):
- An instance that names a reservation (`CapacityReservationTarget`) runs in it, if the
  reservation is active, has room, and has the instance's type and zone; a Capacity Block
  also needs `InstanceMarketOptions.MarketType` = `capacity-block`.
- An instance that names none, with the default preference (`open`), runs in an active
  *open* reservation of its type and zone that has room; a *targeted* reservation takes
  only instances that name it. Otherwise it runs as On-Demand (or Spot) capacity.
- An instance takes its reservation's capacity until it is terminated.
- AWS terminates the instances still running in a Capacity Block 30 minutes before the
  reservation expires ("Work with Capacity Blocks",
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html), the
  end being wherever extensions have moved it.

The store is insert-only: a termination is a record of its own, beside the launch, and
so is each change of an instance's tags (its latest is the one that holds).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, ec2_bad_token, ec2_dry_run, ec2_invalid
from aws_sandbox.filters import TAG_KEY, TAG_KEY_VALUE, Documented, ec2_filter
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import MarketStore, Record
from aws_sandbox.world import zones_selling

INSTANCE = "instance"
TERMINATED = "instance-terminated"
RETAGGED = "instance-tags"  # an instance's whole tag set after its nth change of them
MAX_TAGS = 50  # user tags per resource (EC2 User Guide, "Tag restrictions")
BOOT = timedelta(minutes=1)  # pending -> running
SHUTDOWN = timedelta(minutes=1)  # shutting-down -> terminated
GONE_AFTER = timedelta(hours=1)  # a terminated instance is still listed this long
BLOCK_TERMINATES_BEFORE_END = timedelta(minutes=30)  # Capacity Block instances, by AWS
_STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48}


def terminated_at(
    store: MarketStore, record: Record, aws_terminates_at: datetime | None = None
) -> datetime | None:
    """When the instance was (or will be) terminated: by TerminateInstances, or by AWS at
    `aws_terminates_at` (a Capacity Block's end less 30 minutes), whichever is first."""
    ended = store.get(TERMINATED, record["id"])
    asked = datetime.fromisoformat(ended["at"]) if ended is not None else None
    times = [t for t in (asked, aws_terminates_at) if t is not None]
    return min(times) if times else None


def instance_state(
    store: MarketStore, record: Record, now: datetime, aws_terminates_at: datetime | None = None
) -> str:
    at = terminated_at(store, record, aws_terminates_at)
    if at is not None and now >= at:
        return "shutting-down" if now < at + SHUTDOWN else "terminated"
    return "pending" if now < datetime.fromisoformat(record["launched"]) + BOOT else "running"


def instances_in(store: MarketStore, reservation_id: str, now: datetime) -> int:
    """How many instances take capacity of this reservation now."""
    return sum(
        1
        for r in store.records(INSTANCE)
        if r.get("reservation") == reservation_id
        and instance_state(store, r, now) in ("pending", "running")
    )


# Something that can take an instance: (reservation id, kind, type, zone, criteria,
# active, room left) for every reservation of the region.
Reservations = Callable[[str], list[dict[str, Any]]]


class Instances:
    def __init__(self, parts: MarketParts, reservations: Reservations) -> None:
        self._m = parts
        self._reservations = reservations

    # --- RunInstances ----------------------------------------------------------------------

    def run(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        instance_type = str(params.get("InstanceType") or "")
        spec = self._m.world.spec(instance_type)
        zones = self._m.zones_in(region)
        if spec is None or region not in spec.sold_in:
            raise SandboxError(
                "Unsupported", f"The instance type {instance_type} is not supported in {region}."
            )
        low, high = int(params["MinCount"]), int(params["MaxCount"])
        if not 1 <= low <= high:
            raise ec2_invalid("MinCount must be at least 1 and no more than MaxCount.")
        target = (params.get("CapacityReservationSpecification") or {}).get(
            "CapacityReservationTarget"
        ) or {}
        preference = (params.get("CapacityReservationSpecification") or {}).get(
            "CapacityReservationPreference", "open"
        )
        market = (params.get("InstanceMarketOptions") or {}).get("MarketType")
        zone = (params.get("Placement") or {}).get("AvailabilityZone")
        tags = _instance_tags(params.get("TagSpecifications", []))
        if params.get("DryRun"):
            raise ec2_dry_run()
        now = self._m.clock.now()
        if target.get("CapacityReservationId"):
            reservation = self._targeted(str(target["CapacityReservationId"]), region, params)
            zone, count = reservation["zone"], min(high, reservation["room"])
            if count < low:
                raise SandboxError(
                    "ReservationCapacityExceeded",
                    f"There is not enough capacity in {reservation['id']} for {low} instances "
                    f"({reservation['room']} left).",
                )
            placed = reservation["id"]
        else:
            if market == "capacity-block":
                raise ec2_invalid(
                    "A Capacity Block instance must name its capacity reservation "
                    "(CapacityReservationSpecification.CapacityReservationTarget)."
                )
            selling = zones_selling(spec, zones)
            if zone is not None and zone not in selling:
                raise SandboxError(
                    "Unsupported",
                    f"Your requested instance type ({instance_type}) is not supported in your "
                    f"requested Availability Zone ({zone}). Please retry your request by not "
                    f"specifying an Availability Zone or choosing {', '.join(selling)}.",
                )
            zone = zone or selling[0]
            count, placed = high, None
            if preference == "open" and market != "spot":
                open_one = self._open_reservation(region, instance_type, zone, low)
                if open_one is not None:
                    count, placed = min(high, open_one["room"]), open_one["id"]
        launched = [
            self._launch(region, instance_type, zone, tags, placed, market, now)
            for _ in range(count)
        ]
        return {
            "ReservationId": f"r-{uuid.uuid4().hex[:17]}",
            "OwnerId": self._m.account_id,
            "Groups": [],
            "Instances": [self._render(r, now) for r in launched],
        }

    def _targeted(
        self, reservation_id: str, region: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        found = [r for r in self._reservations(region) if r["id"] == reservation_id]
        if not found:
            raise SandboxError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{reservation_id}' does not exist",
            )
        reservation = found[0]
        market = (params.get("InstanceMarketOptions") or {}).get("MarketType")
        if reservation["kind"] == "capacity-block" and market != "capacity-block":
            raise ec2_invalid(
                "To launch into a Capacity Block, set InstanceMarketOptions.MarketType to "
                "capacity-block."
            )
        if not reservation["active"]:
            raise SandboxError(
                "InvalidCapacityReservationState",
                f"The capacity reservation {reservation_id} is not active.",
            )
        if params.get("InstanceType") != reservation["type"]:
            raise ec2_invalid(
                f"The instance type {params.get('InstanceType')} does not match the capacity "
                f"reservation's ({reservation['type']})."
            )
        zone = (params.get("Placement") or {}).get("AvailabilityZone")
        if zone is not None and zone != reservation["zone"]:
            raise ec2_invalid(f"The capacity reservation is in {reservation['zone']}, not {zone}.")
        return reservation

    def _open_reservation(
        self, region: str, instance_type: str, zone: str, count: int
    ) -> dict[str, Any] | None:
        for r in self._reservations(region):
            if (
                r["criteria"] == "open"
                and r["active"]
                and r["type"] == instance_type
                and r["zone"] == zone
                and r["room"] >= count
            ):
                return r
        return None

    def place(
        self,
        region: str,
        instance_type: str,
        tags: Mapping[str, str] | None = None,
        reservation_id: str | None = None,
    ) -> str:
        """An instance running already, as a person would have launched it (tests and the
        shell use RunInstances through a client; this skips the rules, for setting a scene)."""
        zones = self._m.zones_in(region)
        record = self._launch(
            region,
            instance_type,
            zones[0] if zones else region,
            [{"Key": k, "Value": v} for k, v in dict(tags or {}).items()],
            reservation_id,
            None,
            self._m.clock.now() - BOOT,
        )
        return str(record["id"])

    def _launch(
        self,
        region: str,
        instance_type: str,
        zone: str,
        tags: list[dict[str, str]],
        reservation_id: str | None,
        market: str | None,
        now: datetime,
    ) -> Record:
        record: Record = {
            "id": f"i-{uuid.uuid4().hex[:17]}",
            "region": region,
            "type": instance_type,
            "zone": zone,
            "tags": tags,
            "reservation": reservation_id,
            "market": market,
            "launched": now.isoformat(),
        }
        self._m.store.add(INSTANCE, record["id"], record)
        return record

    # --- DescribeInstances / TerminateInstances ---------------------------------------------

    def _aws_terminates(self, region: str) -> dict[str, datetime]:
        """Capacity Block reservation id -> when AWS terminates the instances in it."""
        return {
            r["id"]: r["end"] - BLOCK_TERMINATES_BEFORE_END
            for r in self._reservations(region)
            if r["kind"] == "capacity-block" and r.get("end") is not None
        }

    def _terminates_at(self, record: Record, blocks: Mapping[str, datetime]) -> datetime | None:
        if record.get("market") != "capacity-block":
            return None
        return blocks.get(str(record.get("reservation")))

    def describe(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        now = self._m.clock.now()
        blocks = self._aws_terminates(region)
        rendered = [self._render(r, now, blocks) for r in self._listed(region, now, blocks)]
        ids = params.get("InstanceIds")
        if ids:
            known = {i["InstanceId"] for i in rendered}
            missing = [i for i in ids if i not in known]
            if missing:
                raise _not_found(missing[0])
            rendered = [i for i in rendered if i["InstanceId"] in ids]
        keep = ec2_filter(params.get("Filters", []), _FILTERS)
        if params.get("DryRun"):
            raise ec2_dry_run()
        page, token = paginate([i for i in rendered if keep(i)], params, ec2_bad_token, 1000)
        response: dict[str, Any] = {
            "Reservations": [
                {
                    "ReservationId": f"r-{i['InstanceId'][2:]}",
                    "OwnerId": self._m.account_id,
                    "Groups": [],
                    "Instances": [i],
                }
                for i in page
            ]
        }
        if token:
            response["NextToken"] = token
        return response

    def terminate(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        now = self._m.clock.now()
        blocks = self._aws_terminates(region)
        listed = {r["id"]: r for r in self._listed(region, now, blocks)}
        ids: Sequence[str] = params["InstanceIds"]
        missing = [i for i in ids if i not in listed]
        if missing:
            raise _not_found(missing[0])
        if params.get("DryRun"):
            raise ec2_dry_run()
        changes = []
        for instance_id in ids:
            record = listed[instance_id]
            by_aws = self._terminates_at(record, blocks)
            before = instance_state(self._m.store, record, now, by_aws)
            self._m.store.add(TERMINATED, instance_id, {"at": now.isoformat()})
            after = instance_state(self._m.store, record, now, by_aws)
            changes.append(
                {
                    "InstanceId": instance_id,
                    "CurrentState": {"Code": _STATE_CODES[after], "Name": after},
                    "PreviousState": {"Code": _STATE_CODES[before], "Name": before},
                }
            )
        return {"TerminatingInstances": changes}

    # --- CreateTags ----------------------------------------------------------------------

    def create_tags(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        """Add the tags given to each instance, overwriting a key it has already; its other
        tags stay (EC2 API Reference, CreateTags:
        https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTags.html). Keys
        starting `aws:` are reserved and a resource holds at most 50 tags (EC2 User Guide,
        "Tag restrictions": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions).
        The sandbox tags instances only."""
        now = self._m.clock.now()
        listed = {r["id"]: r for r in self._listed(region, now, self._aws_terminates(region))}
        ids: Sequence[str] = params["Resources"]
        given = {str(t["Key"]): str(t.get("Value", "")) for t in params.get("Tags", [])}
        others = [i for i in ids if not i.startswith("i-")]
        if others:
            raise ec2_invalid(
                f"The sandbox answers CreateTags for instances only, not {others[0]}."
            )
        missing = [i for i in ids if i not in listed]
        if missing:
            raise _not_found(missing[0])
        if any(key.lower().startswith("aws:") for key in given):
            raise ec2_invalid("Tag keys starting with 'aws:' are reserved for internal use")
        merged: dict[str, list[dict[str, str]]] = {}
        for instance_id in ids:
            now_tagged = {t["Key"]: t["Value"] for t in listed[instance_id]["tags"]} | given
            if len(now_tagged) > MAX_TAGS:
                raise SandboxError(
                    "TagLimitExceeded",
                    f"The maximum number of tags ({MAX_TAGS}) for {instance_id} is exceeded.",
                )
            merged[instance_id] = [{"Key": k, "Value": v} for k, v in now_tagged.items()]
        if params.get("DryRun"):
            raise ec2_dry_run()
        for instance_id, tags in merged.items():
            n = self._m.store.bump(f"{RETAGGED}:{instance_id}")
            change = {"id": instance_id, "n": n, "tags": tags}
            self._m.store.add(RETAGGED, f"{instance_id}:{n}", change)
        return {}

    def _listed(self, region: str, now: datetime, blocks: Mapping[str, datetime]) -> list[Record]:
        """This region's instances, terminated ones for an hour after, each with the tags
        it has now."""
        latest: dict[str, tuple[int, list[dict[str, str]]]] = {}
        for change in self._m.store.records(RETAGGED):
            if change["n"] > latest.get(change["id"], (0, []))[0]:
                latest[change["id"]] = (change["n"], change["tags"])
        out = []
        for record in self._m.store.records(INSTANCE):
            if record["region"] != region:
                continue
            ended = terminated_at(self._m.store, record, self._terminates_at(record, blocks))
            if ended is not None and now >= ended + GONE_AFTER:
                continue
            if record["id"] in latest:
                record = {**record, "tags": latest[record["id"]][1]}
            out.append(record)
        return out

    def _render(
        self, record: Record, now: datetime, blocks: Mapping[str, datetime] | None = None
    ) -> dict[str, Any]:
        by_aws = self._terminates_at(record, blocks or {})
        state = instance_state(self._m.store, record, now, by_aws)
        instance: dict[str, Any] = {
            "InstanceId": record["id"],
            "InstanceType": record["type"],
            "Placement": {"AvailabilityZone": record.get("zone") or "", "Tenancy": "default"},
            "State": {"Code": _STATE_CODES[state], "Name": state},
            "LaunchTime": datetime.fromisoformat(record["launched"]),
            "Tags": record["tags"],
        }
        if record.get("market") in ("spot", "capacity-block"):
            instance["InstanceLifecycle"] = record["market"]
        if record["reservation"]:
            instance["CapacityReservationId"] = record["reservation"]
        return instance


def _instance_tags(specs: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    tags = []
    for spec in specs:
        if spec.get("ResourceType") not in ("instance", "volume", "network-interface"):
            raise ec2_invalid(
                f"'{spec.get('ResourceType')}' is not a valid taggable resource type for this "
                "operation."
            )
        if spec.get("ResourceType") == "instance":
            tags += [{"Key": t["Key"], "Value": t.get("Value", "")} for t in spec.get("Tags", [])]
    return tags


def _not_found(instance_id: str) -> SandboxError:
    return SandboxError(
        "InvalidInstanceID.NotFound", f"The instance ID '{instance_id}' does not exist"
    )


# The DescribeInstances filters the market knows, of the many its page documents (it
# lists tag:<key> and tag-key, not tag-value).
_FILTERS = Documented(
    page="https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html",
    tag_forms=frozenset({TAG_KEY_VALUE, TAG_KEY}),
    fields={
        "instance-id": lambda i: [i["InstanceId"]],
        "instance-type": lambda i: [i["InstanceType"]],
        "instance-state-name": lambda i: [i["State"]["Name"]],
        "instance-state-code": lambda i: [str(i["State"]["Code"])],
        "availability-zone": lambda i: [i["Placement"]["AvailabilityZone"]],
        "capacity-reservation-id": lambda i: [i.get("CapacityReservationId", "")],
        "instance-lifecycle": lambda i: [i.get("InstanceLifecycle", "")],
    },
)
