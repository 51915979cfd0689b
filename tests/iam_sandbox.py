"""The sandbox under the IAM a user deploys: every policy in deploy/ attached, as for a
deployment that quotes, buys and deploys endpoints (deploy/README.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aws_sandbox.iam_guard import IamGuard
from tests.iam_calls import POLICY_FILES, ROOT

SHIPPED = tuple(ROOT / "deploy" / name for name in POLICY_FILES.values())
# Calls the tests make as a person with their own credentials, through the bot's
# clients for brevity: launching into what was bought (the launch line a message shows).
# The bot never makes them (tests/unit/sandbox/test_iam_guard.py checks its code).
PEOPLES_CALLS = frozenset({"ec2:RunInstances"})


def guard(paths: Iterable[Path] = SHIPPED) -> IamGuard:
    return IamGuard.from_files(paths, unjudged=PEOPLES_CALLS)


SHIPPED_IAM = guard()


@contextmanager
def as_someone_else(bot: Any) -> Iterator[None]:
    """What the test does meanwhile (from its own thread) is done by a person with their
    own credentials, not by the bot's role: the bot's policies do not judge it."""
    iam = bot.market.iam
    if iam is None:
        yield
        return
    with iam.aside():
        yield


def without(statement: str, folder: Path) -> list[Path]:
    """Copies of the shipped policies, in `folder`, with the statement `statement` (a
    Sid) taken out of whichever policy has it."""
    copies = []
    for path in SHIPPED:
        document = json.loads(path.read_text())
        kept = [s for s in document["Statement"] if s.get("Sid") != statement]
        document["Statement"] = kept
        copy = folder / path.name
        copy.write_text(json.dumps(document))
        copies.append(copy)
    assert (
        sum(len(json.loads(p.read_text())["Statement"]) for p in copies)
        == sum(len(json.loads(p.read_text())["Statement"]) for p in SHIPPED) - 1
    ), f"no statement {statement} in deploy/"
    return copies
