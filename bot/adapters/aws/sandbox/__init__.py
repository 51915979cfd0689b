"""The sandbox capacity market: simulated EC2 Capacity Blocks, SageMaker training plans,
Spot and On-Demand prices, answered on real boto3 clients."""

from bot.adapters.aws.sandbox.conditions import MarketConditions
from bot.adapters.aws.sandbox.errors import SandboxError
from bot.adapters.aws.sandbox.installer import install_sandbox, sandbox_client, sandbox_clients
from bot.adapters.aws.sandbox.market import SANDBOX_ACCOUNT_ID, SandboxMarket
from bot.adapters.aws.sandbox.shapes import SandboxResponseError, validate_response
from bot.adapters.aws.sandbox.store import InMemoryMarketStore, MarketStore, Record
from bot.adapters.aws.sandbox.zones import DEFAULT_ZONES

__all__ = [
    "DEFAULT_ZONES",
    "SANDBOX_ACCOUNT_ID",
    "InMemoryMarketStore",
    "MarketConditions",
    "MarketStore",
    "Record",
    "SandboxError",
    "SandboxMarket",
    "SandboxResponseError",
    "install_sandbox",
    "sandbox_client",
    "sandbox_clients",
    "validate_response",
]
