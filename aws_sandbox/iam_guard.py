"""The sandbox under IAM: a call the attached policies would not allow is refused as AWS
refuses it.

Each call is turned into what IAM judges (iam_requests.py: the action on each resource
it names, with the request's and the resources' tags, and the dependent actions from
AWS's Service Authorization Reference), and each is decided by the policies
(iam_policy.py, after
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).
The first one not allowed answers with the service's own error: EC2
`UnauthorizedOperation` (HTTP 403,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html), SageMaker
and the Pricing API `AccessDeniedException` (HTTP 400,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html), STS
`AccessDenied` (HTTP 403); the message in the form
https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html shows,
naming the action and the resource.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aws_sandbox.errors import SandboxError
from aws_sandbox.iam_policy import Decision, Policies
from aws_sandbox.iam_requests import Check, TagsOf, checks

PRINCIPAL = "arn:aws:sts::{account}:assumed-role/gpu-bot/sandbox"


class IamGuard:
    """Judges every call under `policies`, except the actions in `unjudged` (calls a test
    makes as a person with their own credentials, not as the principal the policies
    belong to)."""

    def __init__(self, policies: Policies, unjudged: Iterable[str] = ()) -> None:
        self.policies = policies
        self.unjudged = frozenset(unjudged)
        self._aside = threading.local()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Calls made from this thread meanwhile are not judged: a test acting as someone
        else, with their own credentials, through the same clients."""
        self._aside.on = True
        try:
            yield
        finally:
            self._aside.on = False

    @classmethod
    def from_files(cls, paths: Iterable[Path], unjudged: Iterable[str] = ()) -> IamGuard:
        documents = tuple(json.loads(Path(p).read_text()) for p in paths)
        return cls(Policies(documents), unjudged)

    def authorize(
        self,
        service: str,
        operation: str,
        params: Mapping[str, Any],
        region: str,
        account: str,
        tags_of: TagsOf,
    ) -> None:
        action = f"{service}:{operation}"
        if action in self.unjudged or getattr(self._aside, "on", False):
            return
        for check in checks(action, params, region, account, tags_of):
            decision = self.policies.decide(check.action, check.resource, check.context)
            if decision is not Decision.ALLOW:
                raise refused(service, check, decision, account)


def refused(service: str, check: Check, decision: Decision, account: str) -> SandboxError:
    why = (
        "with an explicit deny in an identity-based policy"
        if decision is Decision.EXPLICIT_DENY
        else f"because no identity-based policy allows the {check.action} action"
    )
    said = (
        f"User: {PRINCIPAL.format(account=account)} is not authorized to perform: "
        f"{check.action} on resource: {check.resource} {why}"
    )
    if service == "ec2":
        return SandboxError(
            "UnauthorizedOperation",
            f"You are not authorized to perform this operation. {said}.",
            403,
        )
    if service == "sts":
        return SandboxError("AccessDenied", said, 403)
    return SandboxError("AccessDeniedException", said, 400)
