"""The errors the sandbox answers with, as AWS would: a code, a message, an HTTP status."""

from __future__ import annotations


class SandboxError(Exception):
    """An AWS error response; the installer turns it into the `ClientError` boto3 raises."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def ec2_invalid(message: str) -> SandboxError:
    return SandboxError("InvalidParameterValue", message)


def ec2_bad_token(token: str) -> SandboxError:
    # EC2's wording for a NextToken it did not issue (boto/boto3#2673).
    return ec2_invalid(f"Value ({token}) for parameter nextToken is invalid. The token is invalid.")


def ec2_dry_run() -> SandboxError:
    # EC2 answers a successful dry run with this error and HTTP 412.
    return SandboxError(
        "DryRunOperation", "Request would have succeeded, but DryRun flag is set.", 412
    )


def sagemaker_invalid(message: str) -> SandboxError:
    return SandboxError("ValidationException", message)
