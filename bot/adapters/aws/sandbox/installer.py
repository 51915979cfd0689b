"""Plugs the market into real boto3 clients.

The seam is botocore's `before-call` event, as in `botocore.stub.Stubber`: by then botocore
has validated the request against the real service model, and a handler that returns
`(http_response, parsed)` stands in for the HTTP round trip; a status of 300 or more makes
the client raise the `ClientError` AWS's answer would have raised. Operations the market
does not answer are left alone, for moto or the network.
"""

from __future__ import annotations

import threading
import uuid
from functools import cache, partial
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.client import BaseClient
from botocore.compat import HTTPHeaders
from botocore.model import OperationModel

from bot.adapters.aws.market import AwsClients
from bot.adapters.aws.sandbox.errors import SandboxError
from bot.adapters.aws.sandbox.market import SandboxMarket
from bot.adapters.aws.sandbox.shapes import (
    ec2_validation_message,
    json_validation_message,
    request_violations,
    validate_response,
)
from bot.domain.market import Origin

# `before-call` sees the serialized request, not the caller's parameters: they are kept
# in the request context, which both events share, when the parameters are built.
_PARAMS_KEY = "gpu_bot_sandbox_params"
PRICING_REGION = "us-east-1"  # where the Pricing API is served


def install_sandbox(client: BaseClient, market: SandboxMarket) -> None:
    """Answer `market`'s operations on this client from the market. Installing a second
    market on the same client has no effect: the first one keeps answering."""
    service = client.meta.service_model.service_id.hyphenize()
    events = client.meta.events
    for operation in market.operations(service):
        events.register(
            f"before-parameter-build.{service}.{operation}",
            _keep_params,
            unique_id=f"gpu-bot-sandbox-params-{service}-{operation}",
        )
        events.register(
            f"before-call.{service}.{operation}",
            # botocore-stubs type handlers as returning None; a before-call handler may
            # return the response, which is the whole point (see botocore.stub.Stubber).
            partial(_answer, market, service),  # type: ignore[arg-type]
            unique_id=f"gpu-bot-sandbox-{service}-{operation}",
        )


def _keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    context[_PARAMS_KEY] = params


def _answer(
    market: SandboxMarket,
    service: str,
    model: OperationModel,
    context: dict[str, Any],
    **_: Any,
) -> tuple[AWSResponse, dict[str, Any]]:
    params: dict[str, Any] = context.get(_PARAMS_KEY, {})
    try:
        violations = request_violations(model.input_shape, params)
        if violations and service == "ec2":
            raise SandboxError("InvalidParameterValue", ec2_validation_message(violations[0]))
        if violations:
            raise SandboxError("ValidationException", json_validation_message(violations))
        response = market.handle(service, model.name, params, context["client_region"])
    except SandboxError as error:
        return _http(error.status), {
            "ResponseMetadata": _metadata(error.status),
            "Error": {"Code": error.code, "Message": error.message},
        }
    validate_response(model.output_shape, response)
    return _http(200), response | {"ResponseMetadata": _metadata(200)}


def _http(status: int) -> AWSResponse:
    return AWSResponse("", status, HTTPHeaders(), None)


def _metadata(status: int) -> dict[str, Any]:
    return {
        "RequestId": str(uuid.uuid4()),
        "HTTPStatusCode": status,
        "HTTPHeaders": {},
        "RetryAttempts": 0,
    }


def sandbox_clients(market: SandboxMarket, region: str) -> AwsClients:
    """ec2 and sagemaker clients in `region`, and pricing in us-east-1 (where the Pricing
    API is served), all answered by `market`. Dummy credentials: nothing answered here
    checks them, so no network and no ~/.aws are needed."""
    with _SESSION_LOCK:  # boto3 sessions are not thread-safe
        session = _session()
        ec2 = session.client("ec2", region_name=region)
        sagemaker = session.client("sagemaker", region_name=region)
        pricing = session.client("pricing", region_name=PRICING_REGION)
    for client in (ec2, sagemaker, pricing):
        install_sandbox(client, market)
    return AwsClients(ec2=ec2, sagemaker=sagemaker, pricing=pricing, origin=Origin.SANDBOX)


_SESSION_LOCK = threading.Lock()


@cache
def _session() -> boto3.session.Session:
    """One session for every sandbox client: a new one re-reads the service models (about
    0.1 s each time). Its own events are untouched; each client gets a copy."""
    return boto3.session.Session(
        aws_access_key_id="sandbox",
        aws_secret_access_key="sandbox",  # noqa: S106
        region_name=PRICING_REGION,
    )


def sandbox_client(market: SandboxMarket, service: str, region: str) -> Any:
    """One more client (sts, ...) answered by `market`."""
    with _SESSION_LOCK:
        client = _session().client(service, region_name=region)  # type: ignore[call-overload]
    install_sandbox(client, market)
    return client
