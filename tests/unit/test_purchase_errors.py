"""What a failed buying call means for the money (bot/adapters/aws/purchasing.py
purchase_error): refused only when AWS certainly did nothing; unknown otherwise."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from bot.adapters.aws.purchasing import purchase_error
from bot.services.ports import PurchaseProblem


def client_error(code: str, message: str, status: int = 400, retries: int = 0) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status, "RetryAttempts": retries},
        },
        "PurchaseCapacityBlock",
    )


def test_an_answer_to_a_resend_is_unknown_whatever_it_says() -> None:
    # The first attempt may have bought the block; the re-send is told the offering is gone.
    gone = client_error("InvalidParameterValue", "The offering is no longer available", retries=1)
    assert purchase_error(gone, "buying", buying=True).problem is PurchaseProblem.OUTCOME_UNKNOWN
    # Sent once and refused: certain, nothing was bought.
    once = client_error("InvalidParameterValue", "The offering is no longer available")
    assert purchase_error(once, "buying", buying=True).problem is PurchaseProblem.OFFERING_GONE


@pytest.mark.parametrize(
    ("exc", "problem"),
    [
        (client_error("InternalError", "boom", status=500), PurchaseProblem.OUTCOME_UNKNOWN),
        (ReadTimeoutError(endpoint_url="https://ec2"), PurchaseProblem.OUTCOME_UNKNOWN),
        (EndpointConnectionError(endpoint_url="https://ec2"), PurchaseProblem.REJECTED),
        (client_error("UnauthorizedOperation", "not allowed"), PurchaseProblem.ACCESS_DENIED),
    ],
)
def test_only_a_certain_refusal_is_a_refusal(exc: Exception, problem: PurchaseProblem) -> None:
    assert purchase_error(exc, "buying", buying=True).problem is problem


def test_a_lookup_that_failed_bought_nothing() -> None:
    lost = ReadTimeoutError(endpoint_url="https://ec2")
    assert purchase_error(lost, "looking").problem is PurchaseProblem.UNAVAILABLE
    resent = client_error("InternalError", "boom", status=500, retries=2)
    assert purchase_error(resent, "looking").problem is PurchaseProblem.UNAVAILABLE
