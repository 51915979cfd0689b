"""A simulated AWS capacity market: EC2 Capacity Blocks, On-Demand Capacity Reservations,
SageMaker training plans and hosting, Spot and On-Demand prices, answered on real boto3
clients at the HTTP seam.

It is a fake of AWS, not of any one program: it imports nothing from the code it serves,
and enforces AWS's documented rules written out in `rules.py` and `mig.py` (with the page
each comes from), and the service models' constraints (`shapes.py`).
"""

from aws_sandbox.clock import Clock
from aws_sandbox.conditions import AnswerFault, MarketConditions, PurchaseFailure
from aws_sandbox.errors import SandboxError
from aws_sandbox.installer import install_sandbox, sandbox_client
from aws_sandbox.market import SANDBOX_ACCOUNT_ID, SandboxMarket
from aws_sandbox.shapes import SandboxResponseError, request_violations, validate_response
from aws_sandbox.store import InMemoryMarketStore, MarketStore, Record
from aws_sandbox.zones import DEFAULT_ZONES

__all__ = [
    "DEFAULT_ZONES",
    "SANDBOX_ACCOUNT_ID",
    "AnswerFault",
    "Clock",
    "InMemoryMarketStore",
    "MarketConditions",
    "MarketStore",
    "PurchaseFailure",
    "Record",
    "SandboxError",
    "SandboxMarket",
    "SandboxResponseError",
    "install_sandbox",
    "request_violations",
    "sandbox_client",
    "validate_response",
]
