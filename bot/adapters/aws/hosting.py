"""SageMaker hosting on boto3: the `Hosting` port (bot/services/ports/hosting.py), in the
request's account, on live AWS or the sandbox market alike."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from bot.adapters.aws.accounts import AccountClients
from bot.domain.deployment import ReservedPlan
from bot.services.ports import HostingError, Resource

# What SageMaker says when the thing asked about does not exist.
_NOT_FOUND = ("could not find", "does not exist", "not found")


class AwsHosting:
    def __init__(self, accounts: AccountClients) -> None:
        self._accounts = accounts

    def _sm(self, account: str, region: str) -> Any:
        return self._accounts.clients(account, region).sagemaker

    def training_plan(self, account: str, region: str, arn: str) -> ReservedPlan | None:
        with _errors():
            try:
                plan = self._sm(account, region).describe_training_plan(TrainingPlanName=arn)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
        summaries = plan.get("ReservedCapacitySummaries") or [{}]
        start, end = plan.get("StartTime"), plan.get("EndTime")
        return ReservedPlan(
            arn=plan["TrainingPlanArn"],
            instance_type=summaries[0].get("InstanceType"),
            instances=plan.get("TotalInstanceCount"),
            status=plan.get("Status"),
            target_resources=tuple(plan.get("TargetResources") or ()),
            start=start.astimezone(UTC) if start else None,
            end=end.astimezone(UTC) if end else None,
            fee_usd=float(plan["UpfrontFee"]) if plan.get("UpfrontFee") else None,
        )

    def models(self, account: str, region: str) -> list[str]:
        with _errors():
            pages = self._sm(account, region).get_paginator("list_models").paginate()
            return sorted(m["ModelName"] for page in pages for m in page.get("Models", []))

    def model_role(self, account: str, region: str, model: str) -> str | None:
        with _errors():
            try:
                found = self._sm(account, region).describe_model(ModelName=model)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
        role = found.get("ExecutionRoleArn")
        return str(role) if role else None

    def config(self, account: str, region: str, name: str) -> Resource | None:
        sm = self._sm(account, region)
        with _errors():
            try:
                found = sm.describe_endpoint_config(EndpointConfigName=name)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
            return Resource(name, tags=self._tags(sm, found["EndpointConfigArn"]))

    def endpoint(self, account: str, region: str, name: str) -> Resource | None:
        sm = self._sm(account, region)
        with _errors():
            try:
                found = sm.describe_endpoint(EndpointName=name)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
            return Resource(
                name,
                status=found.get("EndpointStatus"),
                reason=found.get("FailureReason"),
                tags=self._tags(sm, found["EndpointArn"]),
            )

    def components(self, account: str, region: str, endpoint: str) -> list[Resource]:
        sm = self._sm(account, region)
        found = []
        with _errors():
            pages = sm.get_paginator("list_inference_components").paginate(
                EndpointNameEquals=endpoint
            )
            for page in pages:
                for c in page.get("InferenceComponents", []):
                    detail = sm.describe_inference_component(
                        InferenceComponentName=c["InferenceComponentName"]
                    )
                    found.append(
                        Resource(
                            c["InferenceComponentName"],
                            status=c.get("InferenceComponentStatus"),
                            reason=detail.get("FailureReason"),
                            tags=self._tags(sm, c["InferenceComponentArn"]),
                            endpoint=endpoint,
                        )
                    )
        return found

    def create(self, account: str, region: str, operation: str, params: dict[str, Any]) -> None:
        sm = self._sm(account, region)
        calls = {
            "CreateEndpointConfig": lambda: sm.create_endpoint_config(**params),
            "CreateEndpoint": lambda: sm.create_endpoint(**params),
            "CreateInferenceComponent": lambda: sm.create_inference_component(**params),
        }
        with _errors():
            calls[operation]()

    def delete(self, account: str, region: str, kind: str, name: str) -> None:
        sm = self._sm(account, region)
        calls = {
            "inference-component": lambda: sm.delete_inference_component(
                InferenceComponentName=name
            ),
            "endpoint": lambda: sm.delete_endpoint(EndpointName=name),
            "endpoint-config": lambda: sm.delete_endpoint_config(EndpointConfigName=name),
        }
        with _errors():
            try:
                calls[kind]()
            except ClientError as error:
                if not _missing(error):
                    raise

    def tagged(self, account: str, region: str, key: str, value: str) -> list[tuple[str, str]]:
        """Looked for kind by kind (ListTags on each): the Resource Groups Tagging API
        does not list inference components."""
        sm = self._sm(account, region)
        found: list[tuple[str, str]] = []
        listings = (
            ("endpoint-config", "list_endpoint_configs", "EndpointConfigs", "EndpointConfig"),
            ("endpoint", "list_endpoints", "Endpoints", "Endpoint"),
            ("inference-component", "list_inference_components", "InferenceComponents",
             "InferenceComponent"),
        )  # fmt: skip
        with _errors():
            for kind, method, listed, prefix in listings:
                for page in sm.get_paginator(method).paginate():
                    for item in page.get(listed, []):
                        tags = self._tags(sm, item[f"{prefix}Arn"])
                        if tags.get(key) == value:
                            found.append((kind, item[f"{prefix}Name"]))
        return found

    def _tags(self, sm: Any, arn: str) -> dict[str, str]:
        try:
            tags = sm.list_tags(ResourceArn=arn).get("Tags", [])
        except ClientError as error:
            if _missing(error):
                return {}
            raise
        return {t["Key"]: t["Value"] for t in tags}


def _missing(error: ClientError) -> bool:
    err = error.response.get("Error", {})
    code = str(err.get("Code", ""))
    message = str(err.get("Message", "")).lower()
    return code in ("ResourceNotFound", "ValidationException") and any(
        m in message for m in _NOT_FOUND
    )


class _errors:
    """ClientError and connection failures as HostingError (the port's one error)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if isinstance(error, ClientError):
            err = error.response.get("Error", {})
            raise HostingError(str(err.get("Code", "Error")), str(err.get("Message", error)))
        if isinstance(error, BotoCoreError):
            raise HostingError(type(error).__name__, str(error))
