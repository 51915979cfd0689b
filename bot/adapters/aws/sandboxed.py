"""The adapters' clients on the sandbox market (aws_sandbox): the same clients, with the
same retry policies, as live AWS, answered by the simulated market."""

from __future__ import annotations

from aws_sandbox import SandboxMarket, sandbox_client
from bot.adapters.aws.aws_clients import AwsClients
from bot.adapters.aws.clients import make_clients
from bot.domain.market import Origin


def sandbox_clients(market: SandboxMarket, region: str) -> AwsClients:
    return make_clients(
        lambda service, where, config: sandbox_client(market, service, where, config),
        region,
        Origin.SANDBOX,
    )
