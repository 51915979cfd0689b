"""SageMaker models in the sandbox: CreateModel, DescribeModel, ListModels, DeleteModel;
every region starts with a few demo models, so `/gpu deploy` has something to place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_sandbox.hosting.resources import MODEL, HostingTimes, Resources, at, store_key
from aws_sandbox.parts import MarketParts

# A SageMaker model is only a name, an image and a role here.
DEMO_MODELS = ("llama-3-8b", "mistral-7b", "bge-embed", "rerank-v2")
DEMO_ROLE = "arn:aws:iam::{account}:role/gpu-bot-sagemaker"
DEMO_IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"


class Models(Resources):
    def __init__(self, parts: MarketParts, times: HostingTimes, models: Sequence[str]) -> None:
        super().__init__(parts, times)
        self._demo_models = tuple(models)
        self._seeded: set[str] = set()

    def seed(self, region: str) -> None:
        """The demo models of `region`, made once (generation 0 only: a demo model
        deleted stays deleted)."""
        if region in self._seeded:
            return
        self._seeded.add(region)
        for name in self._demo_models:
            record = self._new(MODEL, region, name, {}) | {
                "role": DEMO_ROLE.format(account=self._m.account_id),
                "image": DEMO_IMAGE.format(region=region),
            }
            stored = store_key(region, name, 0)
            self._m.store.add(MODEL, stored, record | {"key": stored})

    def create_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name = str(params["ModelName"])
        record = self._new(MODEL, region, name, params) | {
            "role": params.get("ExecutionRoleArn"),
            "image": (params.get("PrimaryContainer") or {}).get("Image"),
        }
        self._insert(MODEL, region, name, record)
        return {"ModelArn": record["arn"]}

    def describe_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        r = self._get(MODEL, region, str(params["ModelName"])).record
        out = {"ModelName": r["name"], "ModelArn": r["arn"], "CreationTime": at(r["created"])}
        if r.get("role"):
            out["ExecutionRoleArn"] = r["role"]
        if r.get("image"):
            out["PrimaryContainer"] = {"Image": r["image"]}
        return out

    def list_models(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        rows = [
            {
                "ModelName": live.record["name"],
                "ModelArn": live.record["arn"],
                "CreationTime": at(live.record["created"]),
            }
            for live in self._all(MODEL, region)
        ]
        return self._page(rows, params, "Models", "ModelName")

    def delete_model(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        self._delete(MODEL, region, str(params["ModelName"]))
        return {}
