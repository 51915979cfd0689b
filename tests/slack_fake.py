"""The tests' fake Slack Web API: the local server the shell uses too, so the tests and
`gpu-bot shell` exercise one implementation. `FakeSlack(groups=...)` records every call
and can be told to answer 429 or 500; see `bot.adapters.slack.local_api`."""

from __future__ import annotations

from bot.adapters.slack.local_api import Call
from bot.adapters.slack.local_api import LocalSlackApi as FakeSlack

__all__ = ["Call", "FakeSlack"]
