"""Helpers for tests of the live-source market adapter: real boto3 clients built with the
adapter's own retry configuration, and canned AWS answers at two levels.

- `Responder` answers on the clients' `before-call` event, by operation name (Stubber
  answers from one queue in call order, which concurrent lookups on one client cannot
  keep). Parameters are still validated against the real service model first, and
  responses against the operation's output shape, as Stubber does.
- `HttpReplies` answers on `before-send`, after signing and after the retry handler is in
  place: it returns raw HTTP responses (EC2 query XML, JSON), so botocore parses them and
  its retry logic sees them exactly as it would see AWS's.
"""

from __future__ import annotations

import io
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
from botocore.client import BaseClient
from botocore.model import OperationModel
from botocore.validate import validate_parameters

from bot.adapters.aws.clients import session_clients
from bot.adapters.aws.market import AwsClients

REGION = "us-east-1"


def fake_session() -> boto3.session.Session:
    """Credentials that sign requests but reach nothing (every test answers itself)."""
    return boto3.session.Session(
        aws_access_key_id="AKIATESTTESTTESTTEST",
        aws_secret_access_key="test-secret",
        region_name=REGION,
    )


def live_clients(region: str = REGION, session: boto3.session.Session | None = None) -> AwsClients:
    """The clients `clients_factory` makes in live mode, on a session of the test's own."""
    return session_clients(session or fake_session(), region)


# --- before-call: parsed responses by operation name ----------------------------------

Scripted = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
_PARAMS = "gpu_bot_test_params"


@dataclass
class _Error:
    code: str
    message: str
    status: int = 400


@dataclass
class Responder:
    """Answers the listed operations of some clients; other operations go on to whatever
    answers them otherwise (moto, or the network). Thread-safe.

    `add(op, answer)` queues one answer (a response dict, or a function of the call's
    parameters); the last answer of an operation is reused when its queue runs out.
    `barrier`, if set, makes every answered call wait for the others first.
    """

    barrier: threading.Barrier | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    threads: set[str] = field(default_factory=set)
    _answers: dict[str, deque[Scripted | _Error]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, *clients: BaseClient) -> Responder:
        for client in clients:
            # `before-call` sees the serialized request; the call's own parameters (after
            # validation against the model) pass `before-parameter-build` first.
            client.meta.events.register("before-parameter-build.*.*", self._keep_params)
            client.meta.events.register_first("before-call.*.*", self._answer)  # type: ignore[arg-type]
        return self

    def add(self, operation: str, answer: Scripted) -> Responder:
        self._answers[operation].append(answer)
        return self

    def error(self, operation: str, code: str, message: str, status: int = 400) -> Responder:
        self._answers[operation].append(_Error(code, message, status))
        return self

    def clear(self, operation: str) -> Responder:
        """Stop answering `operation` (it goes on to moto, or the network)."""
        self._answers.pop(operation, None)
        return self

    def count(self, operation: str) -> int:
        with self._lock:
            return sum(1 for name, _params in self.calls if name == operation)

    def params(self, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [params for name, params in self.calls if name == operation]

    @staticmethod
    def _keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = dict(params)

    def _answer(
        self, model: OperationModel, context: dict[str, Any], **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        params: dict[str, Any] = context.get(_PARAMS, {})
        with self._lock:
            queue = self._answers.get(model.name)
            if not queue:
                return None
            answer = queue.popleft() if len(queue) > 1 else queue[0]
            self.calls.append((model.name, params))
            self.threads.add(threading.current_thread().name)
        if self.barrier is not None:
            self.barrier.wait()
        if isinstance(answer, _Error):
            parsed: dict[str, Any] = {
                "Error": {"Code": answer.code, "Message": answer.message},
                "ResponseMetadata": {"HTTPStatusCode": answer.status},
            }
            return _response(answer.status), parsed
        body = answer(params) if callable(answer) else answer
        if model.output_shape is not None:
            validate_parameters(body, model.output_shape)
        return _response(200), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }


def _response(status: int) -> AWSResponse:
    return AWSResponse("https://stub.invalid", status, HTTPHeaders(), None)


# --- before-send: raw HTTP -----------------------------------------------------------


class _Raw(io.BytesIO):
    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()


@dataclass(frozen=True)
class Reply:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


def ec2_error(code: str, message: str, status: int = 400) -> Reply:
    """An EC2 query-protocol error, as EC2 sends it."""
    return Reply(
        status,
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message>"
        "</Error></Errors><RequestID>5a3b9c4e-0000-4000-8000-000000000000</RequestID>"
        "</Response>",
        {"Content-Type": "text/xml;charset=UTF-8"},
    )


def json_error(code: str, message: str, status: int = 400) -> Reply:
    """An AWS JSON-protocol error (SageMaker, Pricing)."""
    return Reply(
        status,
        json.dumps({"__type": code, "message": message}),
        {"Content-Type": "application/x-amz-json-1.1"},
    )


@dataclass
class HttpReplies:
    """Answers one operation of one client at the HTTP layer, reply after reply, and keeps
    every request it saw (so a test can count attempts, retries included)."""

    replies: list[Reply]
    requests: list[AWSPreparedRequest] = field(default_factory=list)

    def install(self, client: BaseClient, operation: str) -> HttpReplies:
        service = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register_first(f"before-send.{service}.{operation}", self._send)  # type: ignore[arg-type]
        return self

    def _send(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        reply = self.replies[min(len(self.requests), len(self.replies) - 1)]
        self.requests.append(request)
        headers = HTTPHeaders()
        for name, value in reply.headers.items():
            headers[name] = value
        return AWSResponse(request.url, reply.status, headers, _Raw(reply.body.encode()))
