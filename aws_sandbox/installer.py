"""Plugs the market into real boto3 clients, at the HTTP seam.

The market answers on botocore's `before-send` event, as moto does: by then botocore has
validated the parameters client-side, serialised them into the HTTP request and signed
it; the market reads that request back (wire.py), checks it against the service model as
AWS's servers do (enums, maximums, patterns), answers in AWS's wire format, and
botocore's own parser reads the answer. Because the event is inside botocore's retry
loop, a throttle, a 5xx or a lost answer travels through the client's retry handler as it
would from AWS: what the client re-sends, the market sees again.

Operations the market does not answer are left alone, for moto or the network.
"""

from __future__ import annotations

import threading
import uuid
from functools import cache, partial
from io import BytesIO
from typing import Any

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HeadersDict
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.model import OperationModel

from aws_sandbox import wire
from aws_sandbox.conditions import AnswerFault
from aws_sandbox.errors import SandboxError
from aws_sandbox.market import SandboxMarket
from aws_sandbox.shapes import (
    ec2_validation_message,
    json_validation_message,
    request_violations,
    validate_response,
)

PRICING_REGION = "us-east-1"  # where the Pricing API is served
# moto, when active, answers every request to the AWS hosts it knows at this same event,
# after the market (which registers first); every handler of the event runs. The market
# points a request it answered at a host no one answers for, so moto's stubber, which
# matches on the URL, passes it by.
ANSWERED = "https://answered-by-the-sandbox.invalid/"


def install_sandbox(client: BaseClient, market: SandboxMarket) -> None:
    """Answer `market`'s operations on this client from the market. Installing a second
    market on the same client has no effect: the first one keeps answering."""
    service_model = client.meta.service_model
    service = service_model.service_id.hyphenize()
    region = client.meta.region_name or PRICING_REGION
    for operation in market.operations(service):
        client.meta.events.register_first(
            f"before-send.{service}.{operation}",
            # botocore-stubs type handlers as returning None; a before-send handler may
            # return the response, which is the whole point (as moto's does).
            partial(_answer, market, service, region, service_model.operation_model(operation)),  # type: ignore[arg-type]
            unique_id=f"gpu-bot-sandbox-{service}-{operation}",
        )


class _Body(BytesIO):
    def stream(self, **_: Any) -> Any:
        yield self.getvalue()


def _answer(
    market: SandboxMarket,
    service: str,
    region: str,
    model: OperationModel,
    request: AWSPreparedRequest,
    **_: Any,
) -> AWSResponse:
    protocol = model.service_model.resolved_protocol
    request_id = str(uuid.uuid4())
    params: dict[str, Any] = {}
    try:
        body = request.body
        params = wire.request_params(model, body if isinstance(body, bytes | str) else None)
        violations = request_violations(model.input_shape, params)
        if violations and protocol == "ec2":
            raise SandboxError("InvalidParameterValue", ec2_validation_message(violations[0]))
        if violations:
            raise SandboxError("ValidationException", json_validation_message(violations))
        result = market.handle(service, model.name, params, region)
        validate_response(model.output_shape, result)
        status, body = 200, wire.response_body(model, result, request_id)
    except SandboxError as error:
        status = error.status
        body = wire.error_body(protocol, error.code, error.message, request_id)
    # A fault after the market acted: what AWS did stands, the caller never hears of it.
    fault = None if params.get("DryRun") else market.conditions.take_answer_fault(model.name)
    if fault is AnswerFault.READ_TIMEOUT:
        raise ReadTimeoutError(endpoint_url=request.url)
    if fault is AnswerFault.CONNECTION_RESET:
        raise ConnectionClosedError(endpoint_url=request.url)
    if fault is AnswerFault.SERVER_ERROR:
        status = 500
        body = wire.error_body(
            protocol, "InternalError", "An internal error has occurred.", request_id
        )
    headers = HeadersDict(
        {
            "content-type": wire.content_type(
                protocol, model.service_model.metadata.get("jsonVersion")
            ),
            "x-amzn-requestid": request_id,
        }
    )
    answer = AWSResponse(request.url, status, headers, _Body(body.encode("utf-8")))  # type: ignore[arg-type]
    request.url = ANSWERED
    return answer


def sandbox_client(
    market: SandboxMarket, service: str, region: str, config: Config | None = None
) -> Any:
    """A boto3 client of `service` in `region` answered by `market` (the Pricing API is
    served in us-east-1 whatever `region` says). Dummy credentials: nothing answered here
    checks them, so no network and no ~/.aws are needed. `config` is the caller's botocore
    configuration: its retries run against the market as they would against AWS."""
    if service == "pricing":
        region = PRICING_REGION
    with _SESSION_LOCK:  # boto3 sessions are not thread-safe
        client = _session().client(service, region_name=region, config=config)  # type: ignore[call-overload]
    install_sandbox(client, market)
    return client


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
