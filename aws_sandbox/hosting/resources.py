"""SageMaker hosting resources in the sandbox's insert-only store, as one pattern for all
four kinds (models, endpoint configurations, endpoints, inference components).

A resource's life is two records: the resource under `REGION/NAME#GENERATION`, and a
deletion under the same key in the `deleted` kind. A name becomes free again once its
deletion has finished; the next resource of that name is the next generation. Creation and
deletion are each one atomic insert, so two racing creates of one name make one resource,
as on AWS. SageMaker names are case-insensitive.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aws_sandbox.errors import SandboxError, sagemaker_invalid
from aws_sandbox.pagination import paginate
from aws_sandbox.parts import MarketParts
from aws_sandbox.store import Record
from aws_sandbox.training_plans import TrainingPlans
from aws_sandbox.world import InstanceSpec

MODEL, CONFIG, ENDPOINT, COMPONENT = "model", "endpoint-config", "endpoint", "inference-component"
NOUN = {
    MODEL: "model",
    CONFIG: "endpoint configuration",
    ENDPOINT: "endpoint",
    COMPONENT: "inference component",
}
ARN_KIND = {
    MODEL: "model",
    CONFIG: "endpoint-config",
    ENDPOINT: "endpoint",
    COMPONENT: "inference-component",
}


@dataclass(frozen=True)
class HostingTimes:
    """How long things take on the sandbox clock (AWS's are minutes too)."""

    endpoint_create: timedelta = timedelta(minutes=6)
    partitioning: timedelta = timedelta(seconds=17)  # the source article's measurement
    endpoint_delete: timedelta = timedelta(minutes=2)
    component_create: timedelta = timedelta(minutes=3)
    component_delete: timedelta = timedelta(minutes=1)


@dataclass(frozen=True)
class Live:
    record: Record
    key: str
    deleting_since: datetime | None


class Resources:
    """What every hosting desk shares: the store of its kinds, the clock, the plans."""

    def __init__(self, parts: MarketParts, times: HostingTimes) -> None:
        self._m = parts
        self._times = times
        self._plans = TrainingPlans(parts)

    def _new(self, kind: str, region: str, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        arn = f"arn:aws:sagemaker:{region}:{self._m.account_id}:{ARN_KIND[kind]}/{name.lower()}"
        return {
            "name": name,
            "arn": arn,
            "region": region,
            "created": self._m.clock.now().isoformat(),
            "tags": [dict(t) for t in params.get("Tags", [])],
        }

    def _insert(self, kind: str, region: str, name: str, record: Record) -> None:
        for generation in itertools.count():
            key = store_key(region, name, generation)
            if self._m.store.get(kind, key) is None:
                if not self._m.store.add(kind, key, record | {"key": key}):
                    break  # another create of this name won the race
                return
            if self._live(kind, key) is not None:
                break
        raise exists(kind, record["arn"])

    def _live(self, kind: str, key: str) -> Live | None:
        """The resource under `key` unless its deletion has finished."""
        record = self._m.store.get(kind, key)
        if record is None:
            return None
        deletion = self._m.store.get(deleted(kind), key)
        if deletion is None:
            return Live(record, key, None)
        since = at(deletion["at"])
        if self._m.clock.now() >= since + self._delete_time(kind):
            return None
        return Live(record, key, since)

    def _find(self, kind: str, region: str, name: str) -> Live | None:
        # SageMaker names are case-insensitive: "Llama" and "llama" are one model.
        for generation in itertools.count():
            key = store_key(region, name, generation)
            if self._m.store.get(kind, key) is None:
                return None
            if (live := self._live(kind, key)) is not None:
                return live
        raise AssertionError("unreachable")

    def _get(self, kind: str, region: str, name: str) -> Live:
        live = self._find(kind, region, name)
        if live is None:
            raise sagemaker_invalid(f'Could not find {NOUN[kind]} "{name}".')
        return live

    def _all(self, kind: str, region: str) -> list[Live]:
        return [
            live
            for record in self._m.store.records(kind)
            if record["region"] == region and (live := self._live(kind, record["key"]))
        ]

    def _delete(self, kind: str, region: str, name: str, live: Live | None = None) -> None:
        live = live or self._get(kind, region, name)
        if live.deleting_since is not None or not self._m.store.add(
            deleted(kind), live.key, {"at": self._m.clock.now().isoformat()}
        ):
            raise sagemaker_invalid(f"{NOUN[kind].capitalize()} {name} is already being deleted.")

    def _delete_time(self, kind: str) -> timedelta:
        if kind == ENDPOINT:
            return self._times.endpoint_delete
        if kind == COMPONENT:
            return self._times.component_delete
        return timedelta(0)

    def _plan(self, arn: str, region: str) -> dict[str, Any] | None:
        try:
            return self._plans.describe({"TrainingPlanName": arn}, region)
        except SandboxError:
            return None

    def _instance(self, name: object) -> InstanceSpec | None:
        return self._m.world.spec(name)

    def _page(
        self, rows: list[dict[str, Any]], params: Mapping[str, Any], key: str, name_key: str
    ) -> dict[str, Any]:
        if params.get("NameContains"):
            needle = str(params["NameContains"]).lower()
            rows = [r for r in rows if needle in r[name_key].lower()]
        by_name = params.get("SortBy") == "Name"
        rows.sort(
            key=lambda r: (r[name_key] if by_name else r["CreationTime"], r[name_key]),
            reverse=params.get("SortOrder", "Descending") == "Descending",
        )
        page, token = paginate(
            rows, params, lambda t: sagemaker_invalid(f"Invalid pagination token: {t}"), 10
        )
        response: dict[str, Any] = {key: page}
        if token:
            response["NextToken"] = token
        return response


def store_key(region: str, name: str, generation: int) -> str:
    return f"{region}/{name.lower()}#{generation}"


def deleted(kind: str) -> str:
    return f"{kind}-deleted"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def exists(kind: str, arn: str) -> SandboxError:
    return sagemaker_invalid(f'Cannot create already existing {NOUN[kind]} "{arn}".')
